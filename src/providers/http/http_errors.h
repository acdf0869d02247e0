// providers/http/http_errors.h — error codes of the HTTP transport under the provider adapters.
//
// Stable codes (part of keel's contract). `retryable` follows one rule: true when the same request sent
// again later can succeed without anyone changing configuration (the network or the server was
// momentarily unwell), false when it is a setup problem (TLS trust, a proxy that refuses us, a bad URL).
// An HTTP error status is not an error of this layer: the client passes it through as a response.
// The names carry "Http" so this header can sit beside providers/provider_errors.h, whose kProviderTimeout
// is the same code string as kHttpTimeout.
#pragma once

#include "keel/error_codes.h"

namespace keel::codes {

inline constexpr char kHttpConnectFailed[] = "provider.connect_failed";    // DNS, refused, connect timeout
inline constexpr char kHttpTlsFailed[] = "provider.tls_failed";            // handshake or certificate
inline constexpr char kHttpIdleTimeout[] = "provider.idle_timeout";        // no byte for idle_timeout
inline constexpr char kHttpTimeout[] = "provider.timeout";                 // total_timeout reached
inline constexpr char kHttpConnectionLost[] = "provider.connection_lost";  // ended before the response did
inline constexpr char kHttpProxyFailed[] = "provider.proxy_failed";        // the proxy could not be used
inline constexpr char kHttpFailed[] = "provider.http_failed";              // any other transport failure

}  // namespace keel::codes
