// browser/browser_restore.h — the decisions of keel's restart recovery that need no browser
// (docs/browser.md "Restart and profiles"): when the state file is written, what of a thread is kept in it,
// which of its tabs are reopened after a restart and what the model is told about it.
//
// Pure (no I/O, no clock of its own); StateSaveSchedule is one owner's (BrowserRuntime keeps it on its
// runtime thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "browser/browser_state_file.h"

namespace keel::browser {

// The debounce of the state file's writes: the first change after a write arms one write `delay` later;
// the changes until then ride along with it. So the file is written at most once per `delay`, and never
// more than `delay` after a change.
class StateSaveSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StateSaveSchedule(std::chrono::milliseconds delay) : delay_(delay) {}

  // A change at `now`: when the write is due (arm a timer for it), or nullopt when one is already armed.
  std::optional<Clock::time_point> changed(Clock::time_point now);
  // The armed write is being done (or abandoned): the next change arms a new one.
  void fired() { armed_ = false; }
  bool armed() const { return armed_; }

 private:
  std::chrono::milliseconds delay_;
  bool armed_ = false;
};

// A tab of a thread as the runtime knows it now.
struct LiveTab {
  int64_t tab_id = 0;
  std::string url;  // the last committed http(s) URL; "" when it never had one (about:blank)
  std::string title;
};

// What the state file keeps of a thread: its tabs in order (a tab without an http(s) URL is kept as
// about:blank, so that it is reopened empty), which one is current, and its ref counters.
SavedThread saved_thread(const std::vector<LiveTab>& tabs, int64_t current_tab,
                         nlohmann::json ref_high_water);

// Whether a thread is worth a place in the file: it has tabs, or refs were issued (their counters make a
// ref from before a restart "from before keel restarted" rather than "never issued").
bool worth_saving(const SavedThread& thread);

// One tab to reopen after a restart.
struct ReopenTab {
  int64_t old_tab = 0;
  std::string url;  // http(s) URL to load (GET, Page.navigate); "" = reopen it blank
  std::string title;
  bool current = false;  // exactly one in a non-empty plan
};

// The tabs of a saved thread to reopen, in their order. The saved current tab stays current; when none was
// marked (an older writer), the last one is. Only http(s) URLs are loaded again.
std::vector<ReopenTab> reopen_plan(const SavedThread& saved);

// How one reopened tab fared. A tab is reopened under its old id, so that `tab: N` means the same page.
struct ReopenedTab {
  int64_t tab_id = 0;
  std::string url;       // "" = blank
  bool opened = false;   // false: it could not be reopened and is gone
  bool current = false;  // the thread's current tab again
  std::string problem;   // why it is gone, or why its page did not load; "" = loaded
};

// Why the tabs were reopened: keel itself restarted (the state file), or the browser exited and was
// relaunched (attached again, for a browser keel attaches to) while keel ran.
enum class ReopenCause { kKeelRestarted, kBrowserRelaunched };

// The notice put before the first result after the reopening: what happened, that the tabs were reloaded at
// their last URLs under the same ids (naming each, and each that is gone), and that refs from earlier
// snapshots no longer work. With a temporary profile it adds that cookies and logins from before are gone
// (not for a browser keel is `attached` to: its profile is the person's, and keel did not start it).
std::string restart_notice(const std::vector<ReopenedTab>& tabs, ReopenCause cause, bool persistent_profile,
                           bool attached = false);

}  // namespace keel::browser
