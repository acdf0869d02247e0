// util/origin.h — a typed web origin (scheme, host, port), parsed strictly from an origin or a URL.
//
// Policy decisions (site rules, host permissions) compare origins as typed values, never as string
// prefixes: "https://a.example" must not match "https://a.example.evil.com", "http://a.example" or
// "https://a.example:8443". parse_origin() therefore brings every spelling of one origin to one value:
//   - scheme and host are lower-cased; a single trailing dot of a domain is dropped (the same DNS name);
//   - the port is always filled in: the scheme's default when the input names none (to_string() omits it
//     again), leading zeros are ignored;
//   - an IPv6 literal is kept in brackets in its RFC 5952 form ("[0:0::1]" -> "[::1]"); an IPv4 address is
//     accepted only in dotted-decimal form without leading zeros, so that no second spelling of it
//     ("127.1", "0x7f.0.0.1", "2130706433", "010.0.0.1") can slip past a rule written for the first;
//   - a blob: URL has the origin of the http(s) URL inside it (WHATWG URL §origin).
// Only the tuple origins of http, https, ws and wss are accepted. Everything else fails with
// policy.bad_origin and a message saying why: empty input, no scheme, no host, a bad port, userinfo
// ("user:pass@"), whitespace or control characters, a backslash, a non-ASCII host (write it in punycode,
// "xn--..."), and opaque origins (file:, data:, about:, javascript:, "null", unknown schemes).
//
// Pure functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel {

struct Origin {
  std::string scheme;  // "http", "https", "ws" or "wss"
  std::string host;    // lower-case ASCII domain, dotted-decimal IPv4, or "[ipv6]"
  uint16_t port = 0;   // always set: the scheme's default when the input named none

  // The canonical serialization: "https://example.com", "http://[::1]:8080" (default port omitted).
  std::string to_string() const;
  // Whether the host is an IP address literal (so a domain wildcard "*.host" cannot apply to it).
  bool host_is_ip_address() const;

  friend bool operator==(const Origin&, const Origin&) = default;
};

// What parse_origin() accepts after the host and port.
enum class OriginSyntax {
  kOriginOrUrl,  // a path, query and fragment may follow and are ignored (a page's URL)
  kOriginOnly,   // at most a lone "/" may follow (a rule or permission that names a whole origin)
};

// The origin of `text`. Errors: policy.bad_origin (see the header comment).
Result<Origin> parse_origin(std::string_view text, OriginSyntax syntax = OriginSyntax::kOriginOrUrl);

// The default port of a scheme with a tuple origin (http, https, ws, wss); nullopt for any other.
std::optional<uint16_t> default_port(std::string_view scheme);

}  // namespace keel
