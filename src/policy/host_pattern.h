// policy/host_pattern.h — the typed patterns of keel's host permissions (which origins tools may act on).
//
// Four forms, each matched against a parsed Origin (util/origin.h), never as text:
//   https://a.example        exactly that origin (scheme, host and port);
//   https://*.example.com    that scheme on example.com itself and on every subdomain (label-wise:
//                            "x.example.com" matches, "badexample.com" does not);
//   *://a.example            http://a.example and https://a.example (each on its default port);
//                            combines with the subdomain form: *://*.example.com;
//   <all_urls>               every origin.
// Ports are part of the match: a pattern without a port means the scheme's default one, so
// "https://*.example.com" does not cover https://x.example.com:8443 (name that port to cover it). Unlike
// WebExtensions match patterns, which ignore ports, a permission here never reaches further than it says.
// A trailing "/" or "/*" (copied from a WebExtensions pattern) is accepted and ignored; any other path, a
// bare "*" host ("use <all_urls>"), or a wildcard over an IP address is refused with policy.bad_origin.
//
// Values only; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"
#include "util/origin.h"

namespace keel {

class HostPattern {
 public:
  // Errors: policy.bad_origin (see the header comment).
  static Result<HostPattern> parse(std::string_view text);

  bool matches(const Origin& origin) const;
  // The canonical text: "<all_urls>", "https://*.example.com", "*://a.example:8080", ...
  std::string to_string() const;

  friend bool operator==(const HostPattern&, const HostPattern&) = default;

 private:
  enum class Schemes { kAny, kOne, kHttpAndHttps };
  Schemes schemes_ = Schemes::kAny;  // kAny: <all_urls>
  std::string scheme_;               // kOne
  std::string host_;
  bool subdomains_ = false;
  std::optional<uint16_t> port_;  // nullopt: the origin's scheme's default port
};

}  // namespace keel
