// browser/action_observer.h — what an action did to the page, and when the page is done reacting to it.
//
// Construct it before the action (it listens from then on: nothing the action starts can be missed), run the
// action, then settle() and report(). settle() returns when, in this order of precedence:
//   - a dialog or file chooser opened, the tab crashed or closed, or the call was cancelled: at once;
//   - a main-frame navigation started: when its document reached DOMContentLoaded, or stopped loading (the
//     guard refused it, the network failed), or the navigation timeout passed;
//   - requests the action started (document, XHR, fetch) are still running: until they finish, at most
//     `settle_requests`;
//   - then the page has been quiet (no event the action caused) for `settle_quiet`.
// A page that settles at once costs one quiet window (30 ms by default), not a fixed delay.
// report() gives the compact text the model reads (URL, title, HTTP status, navigation, changes, new tabs,
// an open dialog and the tool that clears it, downloads, console errors, refused navigations) and the
// details for the UI.
//
// Runtime thread only; keep it alive until report() returned.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "browser/browser_runtime.h"
#include "keel/cancellation.h"

namespace keel::browser {

struct ActionReport {
  std::string text;
  nlohmann::json details;
  bool navigated = false;
};

class ActionObserver {
 public:
  ActionObserver(std::shared_ptr<BrowserThread> thread, int64_t tab_id);
  ~ActionObserver();
  ActionObserver(const ActionObserver&) = delete;
  ActionObserver& operator=(const ActionObserver&) = delete;

  // Starts recording DOM changes in `frame_id` (the frame the action acts on), for report()'s "Changes".
  boost::asio::awaitable<void> watch_frame(std::string frame_id);
  boost::asio::awaitable<void> settle(CancellationToken cancel);
  // Fires when the page can no longer answer the action's own command (a dialog or file chooser opened, the
  // tab crashed or closed): a command that waits for the page (Page.navigate under a beforeunload dialog)
  // passes it as its cancellation so that it ends instead of timing out.
  CancellationToken blocked() const { return blocked_.token(); }
  // `done` is the first line ("Clicked e12 (button "Buy 1")."). Adds the refs of new interactive elements.
  boost::asio::awaitable<ActionReport> report(std::string done);

 private:
  struct State;
  void on_event(const CdpEvent& event);
  std::shared_ptr<BrowserThread> thread_;
  std::shared_ptr<BrowserConnection> connection_;
  int64_t tab_id_;
  std::shared_ptr<State> state_;
  CancellationSource blocked_;
  CdpClient::Subscription events_;
};

// The report text of a tab's open dialog or file chooser, naming the tool that clears it; "" when none.
std::string modal_line(const TabState& tab);
// browser.modal_open when the tab has a dialog or file chooser open (what every blocked tool returns).
Result<void> check_no_modal(const TabState& tab);

}  // namespace keel::browser
