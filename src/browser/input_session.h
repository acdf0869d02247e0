// browser/input_session.h — the L2 input session of a tab: a second CDP session to the tab's page
// (Target.attachToTarget{flatten}), attached on the first L2 call, through which every trusted input event
// and screenshot goes (issue 17 plan §1.7, §1.8).
//
// Guarantees:
//   - send_input notes every Input.* command in the session's HeldInput before sending it, so that what a
//     cancelled call left pressed is known even when the command never got an answer.
//   - release_input (interrupt, takeover, shutdown) sends, for every input session of the thread, the
//   releases
//     of held buttons and keys, Input.cancelDragging and Target.detachFromTarget, all within `cap`; the
//     sessions are forgotten first, so two cleanups never release twice and a later L2 call attaches anew.
//   - A session of an earlier browser (relaunch) or of a page target that is gone is never used: the next
//   call
//     attaches a new one.
//
// Runtime thread only; parameters by value (coroutines).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "browser/browser_runtime.h"
#include "browser/cdp/cdp_client.h"
#include "keel/error.h"

namespace keel::browser {

// The session id of the tab's input session, attaching it when the tab has none (or an outdated one).
boost::asio::awaitable<Result<std::string>> input_session(std::shared_ptr<BrowserThread> thread,
                                                          int64_t tab_id);

// One command through the tab's input session (attached if needed); Input.dispatch* are noted as held first.
boost::asio::awaitable<Result<nlohmann::json>> send_input(std::shared_ptr<BrowserThread> thread,
                                                          int64_t tab_id, std::string method,
                                                          nlohmann::json params, CallOptions options);

// Releases everything the thread's input sessions hold and detaches them (header comment).
boost::asio::awaitable<void> release_input(std::shared_ptr<BrowserThread> thread,
                                           std::chrono::milliseconds cap);

}  // namespace keel::browser
