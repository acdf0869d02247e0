// providers/http/http_client.h — the streaming HTTP(S) client the provider adapters send requests with.
//
// HttpClient is the seam (adapters and tests program against it); CurlHttpClient is the real one, on libcurl:
// one worker thread per client drives a curl multi handle, so many requests stream at once over a shared
// connection cache (HTTP/1.1, or HTTP/2 when the server offers it over TLS). HTTPS checks the server against
// the system's CA store. Proxies come from HttpClientOptions::proxy (by default read once from the
// environment: https_proxy / HTTPS_PROXY, http_proxy, all_proxy, no_proxy / NO_PROXY — see proxy_settings.h).
//
// Contract of start():
//   - It returns at once; the handler is called later on the client's worker thread, one call at a time:
//     on_response_head(status, headers) at most once (never for a 1xx interim response), then on_body() for
//     each piece of the body as it arrives (nothing is buffered: a chunk is delivered when the socket gives
//     it), then on_complete() exactly once, last.
//   - An HTTP error status (4xx, 5xx) is a response like any other: head, body, on_complete(success). The
//     caller decides what the status means.
//   - on_complete(error) codes (providers/http/http_errors.h): provider.connect_failed, provider.tls_failed,
//     provider.proxy_failed, provider.idle_timeout (no byte received for idle_timeout once connected),
//     provider.timeout (total_timeout), provider.connection_lost (the connection ended before the response
//     did), provider.http_failed; invalid_argument for a URL curl refuses; cancelled when `cancel` fires.
//   - Cancellation aborts the transfer at once: its callback wakes the worker, which drops the connection;
//     on_body is not called again after the token is seen cancelled, and on_complete gets `cancelled`.
//   - Error messages never contain the request's header values or the URL's query (both may carry keys).
//   - Handlers may call start() again (for example to retry) from inside a callback; they must not block
//     for long, since every transfer of this client waits while a callback runs.
//
// Secrets: the client is a library; it never starts processes and so never puts a key on a command line.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/cancellation.h"
#include "keel/clock.h"
#include "keel/error.h"
#include "providers/http/proxy_settings.h"

namespace keel::providers {

struct HttpHeader {
  std::string name;
  std::string value;
  friend bool operator==(const HttpHeader&, const HttpHeader&) = default;
};

// The value of the first header named `name` (case-insensitive), or nullopt.
std::optional<std::string_view> find_header(const std::vector<HttpHeader>& headers, std::string_view name);

struct HttpRequest {
  std::string method = "POST";
  std::string url;
  std::vector<HttpHeader> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{10'000};  // DNS, TCP, proxy tunnel and TLS handshake
  std::chrono::milliseconds idle_timeout{60'000};     // no byte received for this long, once connected
  std::optional<std::chrono::milliseconds> total_timeout;
};

class HttpStreamHandler {
 public:
  virtual ~HttpStreamHandler() = default;
  virtual void on_response_head(int status, const std::vector<HttpHeader>& headers) = 0;
  // `chunk` is valid only during the call.
  virtual void on_body(std::string_view chunk) = 0;
  virtual void on_complete(Result<void> result) = 0;
};

class HttpClient {
 public:
  virtual ~HttpClient() = default;
  virtual void start(HttpRequest request, CancellationToken cancel,
                     std::shared_ptr<HttpStreamHandler> handler) = 0;
};

struct HttpClientOptions {
  // nullopt: ProxySettings::from_environment(), read once when the client is made.
  std::optional<ProxySettings> proxy;
  // Measures the idle and total timeouts. Null: the system clock. Must outlive the client.
  const Clock* clock = nullptr;
  std::string user_agent = "keel/0.1";
  // PEM bundle to trust instead of the system CA store ("" = system store). For tests and private CAs.
  std::string ca_file;
};

class CurlHttpClient final : public HttpClient {
 public:
  explicit CurlHttpClient(HttpClientOptions options = {});
  // Ends every transfer still running with `cancelled` (on the worker thread) and joins the worker.
  // start() must not be called once destruction has begun.
  ~CurlHttpClient() override;
  CurlHttpClient(const CurlHttpClient&) = delete;
  CurlHttpClient& operator=(const CurlHttpClient&) = delete;

  void start(HttpRequest request, CancellationToken cancel,
             std::shared_ptr<HttpStreamHandler> handler) override;

 private:
  class Worker;
  std::unique_ptr<Worker> worker_;
};

}  // namespace keel::providers
