// providers/http/proxy_settings.h — which proxy, if any, a request goes through.
//
// keel decides this itself instead of letting libcurl read the environment, so the client knows when a
// failure is the proxy's (provider.proxy_failed) and the environment is read once, when a client is made
// (getenv is not safe against a concurrent setenv). The environment is read the way curl and most tools do:
//   https:// URLs: https_proxy, HTTPS_PROXY, then all_proxy, ALL_PROXY;
//   http:// URLs:  http_proxy (lower case only: HTTP_PROXY can be set by a CGI request), then all_proxy,
//                  ALL_PROXY;
//   exceptions:    no_proxy, then NO_PROXY — comma-separated entries, each "*" (everything), a host name
//                  (matches itself and its subdomains; a leading dot is ignored), an IP address, or an IPv4
//                  CIDR block ("10.0.0.0/8"). Ports in entries are not supported.
// An empty variable counts as unset. Pure logic; thread-safe once made.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace keel::providers {

struct ProxySettings {
  std::string https_proxy;  // proxy URL for https:// requests, "" for none
  std::string http_proxy;   // proxy URL for http:// requests, "" for none
  std::string no_proxy;     // exceptions, as in NO_PROXY

  // Looks a variable up; nullopt when unset.
  using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
  static ProxySettings from_environment(const EnvLookup& lookup);
  static ProxySettings from_environment();  // the process environment

  // The proxy URL for a request to `scheme`://`host` ("" = connect directly). `host` may be an IPv6
  // literal in brackets.
  std::string proxy_for(std::string_view scheme, std::string_view host) const;
};

// Whether `host` is exempt from proxying under the NO_PROXY list `no_proxy`.
bool no_proxy_matches(std::string_view no_proxy, std::string_view host);

}  // namespace keel::providers
