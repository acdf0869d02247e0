// model_server/static_site.h — a loopback HTTP/1.1 static file server for the browser tests and the demo:
// it serves one directory, plus a few endpoints that misbehave on purpose.
//
// Files: GET, HEAD and POST (a form submission; the body is read and ignored) of a path under the root
// answer the file with a Content-Type from its extension (unknown: application/octet-stream, so a browser
// downloads it) and `Cache-Control: no-store`; a directory answers its index.html. A path that leaves the
// root (`..` segments, a symbolic link pointing out) or names no regular file answers 404; any other
// method 405. Nothing outside the root is ever read.
//
// Test endpoints (the query string is percent-decoded, `+` is a space):
//   /slow?ms=N        a small HTML page after N milliseconds (0..600000)
//   /hang             reads the request and never answers, until the client closes or the server stops
//   /redirect?to=URL  302 to URL (any URL, another origin included)
//   /status?code=N    an empty-bodied (204, 304) or small HTML answer with status N (200..599)
// A missing or malformed parameter answers 400.
//
// Listeners: every listener binds 127.0.0.1 on a port the system picks and serves the same root. Tests
// reach the second one as `localhost:<port>`: for a browser that is another site, so its frames are
// isolated in their own process (two ports of 127.0.0.1 would be the same site).
//
// Lifetime: start() binds every listener and serves on its own I/O thread until stop(); stopping closes
// every connection, hanging ones included. The destructor stops and joins. Every public member may be
// called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel::model_server {

struct StaticSiteOptions {
  std::filesystem::path root;  // must be a directory
  size_t listeners = 1;        // 1..8
};

class StaticSite {
 public:
  // Fails with invalid_argument (root not a directory, listener count out of range) or
  // model_server.listen_failed.
  static Result<std::unique_ptr<StaticSite>> start(StaticSiteOptions options);
  ~StaticSite();
  StaticSite(const StaticSite&) = delete;
  StaticSite& operator=(const StaticSite&) = delete;

  // The port of listener `index` (0 <= index < listeners).
  uint16_t port(size_t index = 0) const;
  // "http://<host>:<port(index)>"; host "localhost" gives a different site than the default 127.0.0.1.
  std::string origin(size_t index = 0, std::string_view host = "127.0.0.1") const;

  // The request targets (path and query, as sent) received so far, in arrival order, all listeners.
  std::vector<std::string> requests() const;
  // Waits until a request whose path (the target without its query) equals `path` has arrived, counting
  // those already received; false when `timeout` passes first.
  bool wait_for_request(std::string_view path, std::chrono::milliseconds timeout) const;

  void stop();

  class Impl;
  explicit StaticSite(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::model_server
