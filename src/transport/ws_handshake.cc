#include "transport/ws_handshake.h"

#include <algorithm>
#include <boost/asio/ip/address.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "keel/error_codes.h"
#include "transport/transport_errors.h"

namespace keel {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c); });
  return out;
}

// Compares without leaking through timing how much of the token matched.
bool same_token(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const int hi = hex_value(text[i + 1]);
      const int lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i] == '+' ? ' ' : text[i]);
  }
  return out;
}

// The token a request presents: the Authorization header's bearer token, else the `token` query parameter.
std::optional<std::string> presented_token(const HandshakeRequest& request) {
  if (request.authorization) {
    std::string_view value = *request.authorization;
    constexpr std::string_view kBearer = "Bearer ";
    if (value.size() > kBearer.size() && beast::iequals(value.substr(0, kBearer.size()), kBearer))
      return std::string(value.substr(kBearer.size()));
  }
  std::string_view target = request.target;
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.starts_with("token=")) return percent_decode(pair.substr(6));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

// "host[:port]" or "[v6][:port]" split into the lower-cased host (brackets removed) and the port text.
struct HostPort {
  std::string host;
  std::string port;  // empty when absent
};

std::optional<HostPort> split_host_port(std::string_view text) {
  if (text.empty()) return std::nullopt;
  HostPort out;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = lower(text.substr(1, close - 1));
    std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      out.port = std::string(rest.substr(1));
    }
  } else {
    const size_t colon = text.find(':');
    out.host = lower(text.substr(0, colon));
    if (colon != std::string_view::npos) out.port = std::string(text.substr(colon + 1));
    if (out.port.find(':') != std::string::npos) return std::nullopt;  // an unbracketed IPv6 address
  }
  if (out.host.empty()) return std::nullopt;
  for (char c : out.port) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  if (out.port.size() > 5) return std::nullopt;
  return out;
}

std::optional<boost::asio::ip::address> ip_literal(std::string_view text) {
  boost::system::error_code error;
  auto address = boost::asio::ip::make_address(std::string(text), error);
  if (error) return std::nullopt;
  return address;
}

bool same_address(std::string_view a, std::string_view b) {
  auto x = ip_literal(a);
  auto y = ip_literal(b);
  return x && y && *x == *y;
}

bool host_allowed(const std::string& host, const HandshakePolicy& policy) {
  if (host == "localhost" || is_loopback_address(host) || same_address(host, policy.listen_host)) return true;
  if (policy.any_ip_host && ip_literal(host)) return true;
  return std::any_of(policy.allowed_hosts.begin(), policy.allowed_hosts.end(),
                     [&](const std::string& allowed) { return lower(allowed) == host; });
}

// An origin as "scheme://host:port" with the default port written out, lower-cased; nullopt when it is not
// a scheme, host and optional port (a path, `null`, an opaque origin).
std::optional<std::string> normalized_origin(std::string_view origin) {
  const size_t sep = origin.find("://");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  const std::string scheme = lower(origin.substr(0, sep));
  std::string_view rest = origin.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find_first_of("/?#@ ") != std::string_view::npos) return std::nullopt;
  auto host_port = split_host_port(rest);
  if (!host_port) return std::nullopt;
  std::string port = host_port->port;
  if (port.empty()) {
    if (scheme == "http" || scheme == "ws")
      port = "80";
    else if (scheme == "https" || scheme == "wss")
      port = "443";
    else
      return std::nullopt;
  }
  const bool v6 = host_port->host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host_port->host + "]" : host_port->host) + ":" +
         std::to_string(std::stoul(port));
}

HandshakeVerdict refuse(unsigned status, const char* code, std::string message) {
  return HandshakeVerdict{status, code, std::move(message), {}};
}

}  // namespace

bool is_loopback_address(std::string_view address) {
  auto parsed = ip_literal(address);
  if (!parsed) return false;
  if (parsed->is_v6() && parsed->to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, parsed->to_v6()).is_loopback();
  }
  return parsed->is_loopback();
}

std::optional<HandshakeRequest> parse_handshake_header(std::string_view bytes) {
  if (bytes.size() > kMaxHandshakeHeaderBytes) return std::nullopt;
  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(kMaxHandshakeHeaderBytes));
  parser.eager(false);
  beast::error_code error;
  const size_t used = parser.put(boost::asio::const_buffer(bytes.data(), bytes.size()), error);
  if (error || !parser.is_header_done() || used != bytes.size()) return std::nullopt;
  const auto& header = parser.get();
  HandshakeRequest request;
  request.upgrade = beast::websocket::is_upgrade(header);
  const auto length = parser.content_length();
  request.has_body = (length && *length != 0) || header.count(http::field::transfer_encoding) != 0;
  request.target = std::string(header.target());
  const auto field = [&](http::field name) -> std::optional<std::string> {
    const size_t count = header.count(name);
    if (count > 1) request.repeated_field = true;
    if (count == 0) return std::nullopt;
    return std::string(header.find(name)->value());
  };
  request.host = field(http::field::host);
  request.origin = field(http::field::origin);
  request.authorization = field(http::field::authorization);
  return request;
}

HandshakeVerdict check_handshake(const HandshakeRequest& request, const HandshakePolicy& policy) {
  if (request.repeated_field) {
    return refuse(400, codes::kRpcInvalidRequest, "Host, Origin or Authorization given more than once");
  }
  const auto host = request.host ? split_host_port(*request.host) : std::nullopt;
  if (!host || !host_allowed(host->host, policy)) {
    return refuse(403, codes::kRpcHostRefused,
                  "the Host header names neither a loopback address nor this server's address");
  }
  if (request.origin) {
    const auto origin = normalized_origin(*request.origin);
    bool allowed = false;
    if (origin) {
      // keel's own origin: a page this server itself served, at the address the request came to.
      const std::string own_host =
          host->host.find(':') != std::string::npos ? "[" + host->host + "]" : host->host;
      allowed = *origin == "http://" + own_host + ":" + std::to_string(policy.port);
      for (const std::string& listed : policy.allowed_origins) {
        const auto normalized = normalized_origin(listed);
        allowed = allowed || (normalized && *normalized == *origin);
      }
    }
    if (!allowed) {
      return refuse(
          403, codes::kRpcOriginRefused,
          "a web page from another origin may not connect (keel serve --allow-origin lists others)");
    }
  }
  if (request.has_body) return refuse(400, codes::kRpcBodyRefused, "an upgrade request carries no body");
  std::string principal;
  if (policy.credentials.empty()) {
    principal = policy.anonymous_principal;
  } else {
    const auto token = presented_token(request);
    for (const HandshakeCredential& credential : policy.credentials) {
      // Every credential is compared, so the time taken does not tell which one was close.
      if (token && same_token(*token, credential.token) && principal.empty())
        principal = credential.principal;
    }
    if (principal.empty()) return refuse(401, codes::kRpcUnauthorized, "a valid token is required");
  }
  if (!request.upgrade) return refuse(426, codes::kRpcInvalidRequest, "WebSocket only");
  return HandshakeVerdict{101, {}, {}, std::move(principal)};
}

}  // namespace keel
