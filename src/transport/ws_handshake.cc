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
  HandshakeVerdict verdict;
  verdict.status = status;
  verdict.code = code;
  verdict.message = std::move(message);
  return verdict;
}

// The value of the cookie `name` among the request's Cookie fields ("a=1; b=2"); nullopt when absent or
// given twice (ambiguous).
std::optional<std::string> cookie_value(const HandshakeRequest& request, std::string_view name) {
  std::optional<std::string> found;
  for (std::string_view field : request.cookies) {
    while (!field.empty()) {
      const size_t semi = field.find(';');
      std::string_view pair = field.substr(0, semi);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      const size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
        if (found) return std::nullopt;
        found = std::string(pair.substr(eq + 1));
      }
      if (semi == std::string_view::npos) break;
      field.remove_prefix(semi + 1);
    }
  }
  return found;
}

// The request target's path (before any query).
std::string_view path_of(std::string_view target) { return target.substr(0, target.find('?')); }

// The principal of the server's own token among the credentials ("owner"), if the token presented is it.
bool presents_owner_token(const std::optional<std::string>& token, const HandshakePolicy& policy) {
  bool owner = false;
  for (const HandshakeCredential& credential : policy.credentials) {
    if (credential.principal == "owner" && token && same_secret(*token, credential.token)) owner = true;
  }
  return owner;
}

HandshakeVerdict with_action(HandshakeAction action, unsigned status, std::string principal = {}) {
  HandshakeVerdict verdict;
  verdict.action = action;
  verdict.status = status;
  verdict.principal = std::move(principal);
  return verdict;
}

HandshakeVerdict check_session_request(const HandshakeRequest& request, const HandshakePolicy& policy,
                                       bool own_origin) {
  if (request.method != "POST") {
    return refuse(405, codes::kRpcInvalidRequest, "/session takes POST only");
  }
  if (policy.sessions == nullptr) return refuse(404, codes::kRpcInvalidRequest, "no web interface here");
  const auto token = presented_token(request);
  if (token) {
    // The one-time token is consumed only when the server token did not match: presenting the server token
    // leaves the printed URL usable.
    if (presents_owner_token(token, policy) || policy.sessions->take_one_time_token(*token)) {
      return with_action(HandshakeAction::kOpenSession, 204, "owner");
    }
    return refuse(401, codes::kRpcUnauthorized, "the token is not valid (a one-time token works once)");
  }
  if (policy.credentials.empty()) return with_action(HandshakeAction::kOpenSession, 204, "owner");
  const auto cookie = cookie_value(request, session_cookie_name(policy.port));
  if (own_origin && cookie && policy.sessions->valid(*cookie)) {
    return with_action(HandshakeAction::kKeepSession, 204, "owner");
  }
  return refuse(401, codes::kRpcUnauthorized, "a valid token is required");
}

}  // namespace

std::string session_cookie_name(uint16_t port) { return "keel_session_" + std::to_string(port); }

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
  request.method = std::string(header.method_string());
  request.target = std::string(header.target());
  for (auto it = header.find(http::field::cookie); it != header.end() && it->name() == http::field::cookie;
       ++it)
    request.cookies.emplace_back(it->value());
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
  const std::string own_host =
      host->host.find(':') != std::string::npos ? "[" + host->host + "]" : host->host;
  bool own_origin = false;
  if (request.origin) {
    const auto origin = normalized_origin(*request.origin);
    bool allowed = false;
    if (origin) {
      // keel's own origin: a page this server itself served, at the address the request came to.
      own_origin = *origin == "http://" + own_host + ":" + std::to_string(policy.port);
      allowed = own_origin;
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
  if (request.has_body) return refuse(400, codes::kRpcBodyRefused, "a request to keel carries no body");
  HandshakeVerdict verdict = [&] {
    const std::string_view path = path_of(request.target);
    if (!request.upgrade) {
      if (path == "/session") return check_session_request(request, policy, own_origin);
      if (request.method != "GET" && request.method != "HEAD") {
        return refuse(405, codes::kRpcInvalidRequest, "only GET and HEAD here (and POST /session)");
      }
      if (path == "/rpc") return refuse(426, codes::kRpcInvalidRequest, "WebSocket only");
      return with_action(HandshakeAction::kServeFile, 200);
    }
    std::string principal;
    if (policy.credentials.empty()) {
      principal = policy.anonymous_principal;
    } else {
      const auto token = presented_token(request);
      for (const HandshakeCredential& credential : policy.credentials) {
        // Every credential is compared, so the time taken does not tell which one was close.
        if (token && same_secret(*token, credential.token) && principal.empty())
          principal = credential.principal;
      }
      // A cookie is sent by the browser to any page's request to this port: it counts only from keel's own
      // page.
      const auto cookie = cookie_value(request, session_cookie_name(policy.port));
      if (principal.empty() && own_origin && cookie && policy.sessions != nullptr &&
          policy.sessions->valid(*cookie))
        principal = "owner";
      if (principal.empty()) return refuse(401, codes::kRpcUnauthorized, "a valid token is required");
    }
    return with_action(HandshakeAction::kUpgrade, 101, std::move(principal));
  }();
  if (verdict.accepted())
    verdict.self_host = own_host + ":" + (host->port.empty() ? std::to_string(policy.port) : host->port);
  return verdict;
}

}  // namespace keel
