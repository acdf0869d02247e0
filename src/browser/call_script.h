// browser/call_script.h — runs one function of keel's page scripts (`__keel.<fn>(args)`, page_scripts.h) in a
// frame's isolated world and returns its JSON result.
//
// What it guarantees:
//   - The function runs in keel's world `keel` of the frame's current document (never the page's own world):
//     Runtime.callFunctionOn with returnByValue and awaitPromise (a function returning a promise is awaited),
//     userGesture when asked (DOM-level actions that need transient activation).
//   - When the document has no keel world yet (it was not created by the new-document script), it is created
//     (Page.createIsolatedWorld) and the bundle evaluated in it; the bundle keeps an existing `__keel`.
//   - The result is the function's value; a thrown exception or a missing function is
//     browser.bad_script_result with the exception's text; a document that went away between the lookup and
//     the call is retried once in the new document's world.
//   - No reply within `timeout` is browser.cdp_timeout and a fired token is `cancelled`; either way the
//   frame's
//     session gets Runtime.terminateExecution, so a runaway script does not keep the renderer busy.
//   - A crashed tab is browser.tab_crashed, an exited browser browser.crashed (BrowserConnection::call), an
//     unknown tab invalid_argument, a frame that is gone browser.target_closed.
//
// Threading: on the connection's executor, like BrowserConnection.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "browser/browser_connection.h"
#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::browser {

struct ScriptOptions {
  std::chrono::milliseconds timeout{10'000};
  CancellationToken cancel{};
  bool user_gesture = false;
};

// Parameters by value (coroutine).
boost::asio::awaitable<Result<nlohmann::json>> call_script(std::shared_ptr<BrowserConnection> connection,
                                                           int64_t tab_id, std::string frame_id,
                                                           std::string fn, nlohmann::json args,
                                                           ScriptOptions options);

}  // namespace keel::browser
