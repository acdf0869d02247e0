// mcp/auth/loopback_redirect.h — where the person's browser comes back to after signing in: a one-shot
// HTTP listener on 127.0.0.1 (RFC 8252 §7.3, loopback redirection for native apps).
//
// open() binds 127.0.0.1 on a port the system picks; redirect_uri() is "http://127.0.0.1:PORT/callback".
// wait() accepts connections until one asks for GET /callback (others get 404 and are closed), answers it
// with a short page telling the person they may close the window, and returns the whole redirect URL (with
// its query, which carries the code: never log it). A request larger than 16 KiB is refused. wait() ends
// with mcp.auth_denied when `timeout` passes or `cancel` fires first.
//
// make_loopback_authorizer() is the Authorizer a person uses: it shows the authorization URL through
// `show` (the CLI prints it and may open the browser) and waits for the redirect.
//
// One listener per sign-in; wait() is called once, from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "keel/cancellation.h"
#include "keel/error.h"
#include "mcp/auth/oauth_flow.h"

namespace keel::mcp {

class LoopbackRedirectListener {
 public:
  // Errors: mcp.auth_denied (no port could be bound).
  static Result<std::unique_ptr<LoopbackRedirectListener>> open();
  ~LoopbackRedirectListener();
  LoopbackRedirectListener(const LoopbackRedirectListener&) = delete;
  LoopbackRedirectListener& operator=(const LoopbackRedirectListener&) = delete;

  uint16_t port() const;
  std::string redirect_uri() const;
  Result<std::string> wait(std::chrono::milliseconds timeout, CancellationToken cancel);

  struct Impl;  // defined in the .cc only, so nothing outside can make one
  explicit LoopbackRedirectListener(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// `listener` must outlive the authorizer's use. `show` receives the authorization URL.
Authorizer make_loopback_authorizer(LoopbackRedirectListener& listener,
                                    std::function<void(const std::string&)> show,
                                    std::chrono::milliseconds timeout, CancellationToken cancel);

}  // namespace keel::mcp
