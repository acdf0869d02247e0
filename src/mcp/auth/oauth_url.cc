// mcp/auth/oauth_url.cc — URL parsing and encoding through curl_url and curl_easy_escape.
#include "mcp/auth/oauth_url.h"

#include <curl/curl.h>

#include <cctype>
#include <memory>

#include "mcp/auth/auth_errors.h"

namespace keel::mcp {
namespace {

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

struct CurlStringDeleter {
  void operator()(char* text) const { curl_free(text); }
};
using CurlString = std::unique_ptr<char, CurlStringDeleter>;

Error bad_url(std::string_view url, std::string_view why) {
  // The query may carry a code or a token: only the part before it is named.
  const std::string_view shown = url.substr(0, url.find('?'));
  return Error(codes::kMcpAuthBadUrl, "'" + std::string(shown.substr(0, 200)) + "': " + std::string(why));
}

std::optional<std::string> part(CURLU* url, CURLUPart which, unsigned flags = 0) {
  char* raw = nullptr;
  if (curl_url_get(url, which, &raw, flags) != CURLUE_OK || raw == nullptr) return std::nullopt;
  CurlString owned(raw);
  return std::string(owned.get());
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Percent-encodes everything but RFC 3986's unreserved characters (form encoding then turns spaces into
// "%20", which every server decodes).
std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0x0f]);
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Form decoding: '+' is a space, "%XY" a byte; a '%' not followed by two hex digits stays as it is.
std::string unescape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
               hex_value(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2])));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string HttpUrl::origin() const { return scheme + "://" + host + (port.empty() ? "" : ":" + port); }

std::string HttpUrl::to_string() const { return origin() + path + (query.empty() ? "" : "?" + query); }

Result<HttpUrl> parse_http_url(std::string_view text) {
  if (text.size() > 8192) return std::unexpected(bad_url(text, "longer than 8 KiB"));
  UrlHandle url(curl_url());
  if (!url) return std::unexpected(Error("internal", "curl_url: out of memory"));
  const std::string owned(text);
  if (curl_url_set(url.get(), CURLUPART_URL, owned.c_str(), 0) != CURLUE_OK) {
    return std::unexpected(bad_url(text, "not an absolute URL"));
  }
  HttpUrl out;
  out.scheme = lower(part(url.get(), CURLUPART_SCHEME).value_or(""));
  if (out.scheme != "http" && out.scheme != "https")
    return std::unexpected(bad_url(text, "not http or https"));
  if (part(url.get(), CURLUPART_USER))
    return std::unexpected(bad_url(text, "a user name in a URL is refused"));
  out.host = lower(part(url.get(), CURLUPART_HOST).value_or(""));
  if (out.host.empty()) return std::unexpected(bad_url(text, "no host"));
  out.port = part(url.get(), CURLUPART_PORT).value_or("");
  if ((out.scheme == "https" && out.port == "443") || (out.scheme == "http" && out.port == "80"))
    out.port.clear();
  out.path = part(url.get(), CURLUPART_PATH).value_or("/");
  if (out.path.empty()) out.path = "/";
  out.query = part(url.get(), CURLUPART_QUERY).value_or("");
  return out;
}

Result<std::string> canonical_resource_uri(std::string_view server_url) {
  auto url = parse_http_url(server_url);
  if (!url) return std::unexpected(url.error());
  std::string path = url->path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (path == "/") path.clear();
  return url->origin() + path;
}

std::string form_encode(const QueryParams& params) {
  std::string out;
  for (const auto& [name, value] : params) {
    if (!out.empty()) out.push_back('&');
    out += escape(name);
    out.push_back('=');
    out += escape(value);
  }
  return out;
}

QueryParams form_decode(std::string_view text) {
  QueryParams out;
  while (!text.empty()) {
    const size_t amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      out.emplace_back(unescape(pair.substr(0, eq)),
                       eq == std::string_view::npos ? std::string() : unescape(pair.substr(eq + 1)));
    }
    if (amp == std::string_view::npos) break;
    text.remove_prefix(amp + 1);
  }
  return out;
}

std::optional<std::string> find_param(const QueryParams& params, std::string_view name) {
  for (const auto& [key, value] : params) {
    if (key == name) return value;
  }
  return std::nullopt;
}

Result<std::string> with_query(std::string_view url, const QueryParams& params) {
  auto parsed = parse_http_url(url);
  if (!parsed) return std::unexpected(parsed.error());
  const std::string added = form_encode(params);
  if (!added.empty()) parsed->query = parsed->query.empty() ? added : parsed->query + "&" + added;
  return parsed->to_string();
}

}  // namespace keel::mcp
