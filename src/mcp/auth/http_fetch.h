// mcp/auth/http_fetch.h — the real HttpFetch of the sign-in flow, on keel's HTTP client.
//
// One blocking exchange per call: the request goes out through providers::HttpClient (proxies, TLS checks
// and timeouts as for model providers; redirects are not followed, which the flow relies on), the caller
// waits for the whole response. Bodies over max_body_bytes end the transfer with mcp.auth_bad_metadata (an
// authorization server has no reason to send megabytes), and every transport error keeps its provider.*
// code.
//
// Thread-safe: calls may come from several threads at once; each waits only for its own exchange. The client
// must outlive the fetch.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>

#include "mcp/auth/oauth_flow.h"
#include "providers/http/http_client.h"

namespace keel::mcp {

struct HttpFetchOptions {
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds total_timeout{30'000};
  size_t max_body_bytes = 1024 * 1024;
};

HttpFetch make_http_fetch(std::shared_ptr<providers::HttpClient> client, HttpFetchOptions options = {});

}  // namespace keel::mcp
