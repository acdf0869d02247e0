#include "util/origin.h"

#include <array>
#include <cstddef>

#include "keel/error_codes.h"

namespace keel {
namespace {

constexpr size_t kMaxHostBytes = 253;  // DNS: a name of at most 253 characters in text form
constexpr size_t kMaxLabelBytes = 63;
constexpr size_t kMaxQuotedBytes = 80;

bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = ascii_lower(c);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The input as it may appear in a message: cut short, and with every byte that is not printable ASCII
// replaced, because messages end up in JSON events and logs that must stay valid UTF-8.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxQuotedBytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += (c > 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (text.size() > kMaxQuotedBytes) out += "...";
  return out + "'";
}

std::unexpected<Error> bad_origin(std::string_view input, std::string_view problem) {
  return fail(codes::kPolicyBadOrigin, quoted(input) + " is not a usable origin: " + std::string(problem));
}

// ---- IPv6 (WHATWG URL "IPv6 parser" and "IPv6 serializer") ----

using Ipv6 = std::array<uint16_t, 8>;

std::optional<Ipv6> parse_ipv6(std::string_view s) {
  Ipv6 address{};
  size_t piece = 0;
  std::optional<size_t> compress;
  size_t i = 0;
  const auto at = [&](size_t k) { return k < s.size() ? s[k] : '\0'; };
  if (at(0) == ':') {
    if (at(1) != ':') return std::nullopt;
    i = 2;
    compress = ++piece;
  }
  while (i < s.size()) {
    if (piece == 8) return std::nullopt;
    if (s[i] == ':') {
      if (compress) return std::nullopt;
      ++i;
      compress = ++piece;
      continue;
    }
    unsigned value = 0;
    size_t length = 0;
    while (length < 4 && hex_value(at(i)) >= 0) {
      value = value * 16 + static_cast<unsigned>(hex_value(at(i)));
      ++i;
      ++length;
    }
    if (at(i) == '.') {  // an embedded IPv4 address fills the last two pieces
      if (length == 0 || piece > 6) return std::nullopt;
      i -= length;
      int numbers_seen = 0;
      while (i < s.size()) {
        if (numbers_seen > 0) {
          if (s[i] != '.' || numbers_seen >= 4) return std::nullopt;
          ++i;
        }
        if (!is_digit(at(i))) return std::nullopt;
        std::optional<unsigned> part;
        while (is_digit(at(i))) {
          const auto digit = static_cast<unsigned>(s[i] - '0');
          if (part && *part == 0) return std::nullopt;  // a leading zero
          part = part ? *part * 10 + digit : digit;
          if (*part > 255) return std::nullopt;
          ++i;
        }
        address[piece] = static_cast<uint16_t>(address[piece] * 0x100 + *part);
        ++numbers_seen;
        if (numbers_seen == 2 || numbers_seen == 4) ++piece;
      }
      if (numbers_seen != 4) return std::nullopt;
      break;
    }
    if (at(i) == ':') {
      ++i;
      if (i == s.size()) return std::nullopt;
    } else if (i < s.size()) {
      return std::nullopt;
    }
    address[piece++] = static_cast<uint16_t>(value);
  }
  if (compress) {
    size_t swaps = piece - *compress;
    piece = 7;
    while (piece != 0 && swaps > 0) {
      std::swap(address[piece], address[*compress + swaps - 1]);
      --piece;
      --swaps;
    }
  } else if (piece != 8) {
    return std::nullopt;
  }
  return address;
}

std::string serialize_ipv6(const Ipv6& address) {
  // RFC 5952: the first longest run of two or more zero pieces becomes "::".
  std::optional<size_t> compress;
  size_t best = 1;
  for (size_t i = 0; i < 8;) {
    size_t run = 0;
    while (i + run < 8 && address[i + run] == 0) ++run;
    if (run > best) {
      best = run;
      compress = i;
    }
    i += run == 0 ? 1 : run;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "[";
  for (size_t i = 0; i < 8; ++i) {
    if (compress && i == *compress) {
      out += i == 0 ? "::" : ":";
      i += best - 1;
      continue;
    }
    std::string piece;
    for (uint16_t v = address[i];; v = static_cast<uint16_t>(v >> 4)) {
      piece.insert(piece.begin(), kHex[v & 0xf]);
      if (v < 16) break;
    }
    out += piece;
    if (i != 7) out += ':';
  }
  return out + "]";
}

// ---- domains and IPv4 ----

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// WHATWG's "ends in a number": such a host is parsed as an IPv4 address, in any of its many spellings.
bool ends_in_number(std::string_view host) {
  const size_t dot = host.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? host : host.substr(dot + 1);
  if (all_digits(last)) return true;
  if (last.size() >= 2 && last[0] == '0' && last[1] == 'x') {
    for (char c : last.substr(2)) {
      if (hex_value(c) < 0) return false;
    }
    return true;
  }
  return false;
}

bool is_dotted_decimal_ipv4(std::string_view host) {
  int parts = 0;
  size_t start = 0;
  while (true) {
    const size_t dot = host.find('.', start);
    const std::string_view part = host.substr(start, dot == std::string_view::npos ? host.npos : dot - start);
    if (!all_digits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return false;
    if (std::stoi(std::string(part)) > 255) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

Result<std::string> canonical_host(std::string_view input, std::string_view raw) {
  if (raw.empty()) return bad_origin(input, "it has no host");
  if (raw.front() == '[') {
    if (raw.back() != ']') return bad_origin(input, "an IPv6 host must be closed by ']'");
    const auto address = parse_ipv6(raw.substr(1, raw.size() - 2));
    if (!address) return bad_origin(input, "the IPv6 address " + quoted(raw) + " is not valid");
    return serialize_ipv6(*address);
  }
  std::string host = lowered(raw);
  if (host.size() > 1 && host.back() == '.') host.pop_back();
  for (char c : host) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x80) return bad_origin(input, "the host is not ASCII; write it in punycode (xn--...)");
    if (!(is_ascii_alpha(c) || is_digit(c) || c == '-' || c == '_' || c == '.')) {
      return bad_origin(input, "the host contains '" + std::string(1, c) + "'");
    }
  }
  if (host.size() > kMaxHostBytes) return bad_origin(input, "the host is longer than 253 characters");
  size_t start = 0;
  while (true) {
    const size_t dot = host.find('.', start);
    const size_t length = (dot == std::string::npos ? host.size() : dot) - start;
    if (length == 0) return bad_origin(input, "the host has an empty label");
    if (length > kMaxLabelBytes) return bad_origin(input, "a label of the host is longer than 63 characters");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (ends_in_number(host) && !is_dotted_decimal_ipv4(host)) {
    return bad_origin(input,
                      "an IPv4 host must be written as four decimal numbers 0-255 without leading zeros");
  }
  return host;
}

Result<uint16_t> parse_port(std::string_view input, std::string_view text) {
  if (text.empty()) return bad_origin(input, "the port after ':' is empty");
  unsigned value = 0;
  for (char c : text) {
    if (!is_digit(c)) return bad_origin(input, "the port " + quoted(text) + " is not a number");
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > 65535) return bad_origin(input, "the port is larger than 65535");
  }
  return static_cast<uint16_t>(value);
}

bool valid_scheme(std::string_view scheme) {
  if (scheme.empty() || !is_ascii_alpha(scheme[0])) return false;
  for (char c : scheme) {
    if (!(is_ascii_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.')) return false;
  }
  return true;
}

Result<Origin> parse(std::string_view input, std::string_view text, OriginSyntax syntax, bool inside_blob) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || !valid_scheme(text.substr(0, colon))) {
    return bad_origin(input, "it has no scheme (expected e.g. https://example.com)");
  }
  const std::string scheme = lowered(text.substr(0, colon));
  std::string_view rest = text.substr(colon + 1);
  if (scheme == "blob" && !inside_blob) {
    Result<Origin> inner = parse(input, rest, OriginSyntax::kOriginOrUrl, true);
    if (inner && inner->scheme != "http" && inner->scheme != "https") {
      return bad_origin(input, "a blob: URL of a " + inner->scheme + ": URL has an opaque origin");
    }
    return inner;
  }
  const std::optional<uint16_t> fallback_port = default_port(scheme);
  if (!fallback_port && !rest.starts_with("//") &&
      (scheme.find('.') != std::string::npos || all_digits(rest))) {
    // "example.com:8080" or "localhost:3000": a host and port, not a scheme.
    return bad_origin(input, "it has no scheme (expected e.g. https://example.com)");
  }
  if (!fallback_port) {
    return bad_origin(input, "a " + scheme +
                                 ": URL has no origin keel can name (only http, https, ws and wss "
                                 "origins can be allowed or refused)");
  }
  if (!rest.starts_with("//")) return bad_origin(input, "expected '//' after '" + scheme + ":'");
  rest.remove_prefix(2);

  const size_t end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, end);
  const std::string_view tail = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (syntax == OriginSyntax::kOriginOnly && !tail.empty() && tail != "/") {
    return bad_origin(input, "an origin has no path, query or fragment");
  }
  if (authority.find('@') != std::string_view::npos) {
    return bad_origin(input, "userinfo (user:password@) is not allowed");
  }

  std::string_view raw_host = authority;
  std::optional<std::string_view> raw_port;
  const size_t host_end = authority.starts_with('[') ? authority.find(']') : std::string_view::npos;
  const size_t port_colon = authority.starts_with('[')
                                ? (host_end == std::string_view::npos ? host_end : host_end + 1)
                                : authority.find(':');
  if (port_colon != std::string_view::npos && port_colon < authority.size()) {
    if (authority[port_colon] != ':') return bad_origin(input, "unexpected text after the IPv6 host");
    raw_host = authority.substr(0, port_colon);
    raw_port = authority.substr(port_colon + 1);
  }
  Origin origin;
  origin.scheme = scheme;
  origin.host = KEEL_TRY(canonical_host(input, raw_host));
  origin.port = raw_port ? KEEL_TRY(parse_port(input, *raw_port)) : *fallback_port;
  return origin;
}

}  // namespace

std::optional<uint16_t> default_port(std::string_view scheme) {
  if (scheme == "http" || scheme == "ws") return 80;
  if (scheme == "https" || scheme == "wss") return 443;
  return std::nullopt;
}

std::string Origin::to_string() const {
  std::string text = scheme + "://" + host;
  if (default_port(scheme) != port) text += ":" + std::to_string(port);
  return text;
}

bool Origin::host_is_ip_address() const { return host.starts_with('[') || is_dotted_decimal_ipv4(host); }

Result<Origin> parse_origin(std::string_view text, OriginSyntax syntax) {
  if (text.empty()) return bad_origin(text, "it is empty");
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte == 0x7f)
      return bad_origin(text, "it contains whitespace or a control character");
    if (c == '\\') return bad_origin(text, "it contains a backslash");
  }
  if (text == "null") return bad_origin(text, "'null' is an opaque origin and names no site");
  return parse(text, text, syntax, false);
}

}  // namespace keel
