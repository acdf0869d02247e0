#include "browser/browser_restore.h"

#include <utility>

namespace keel::browser {
namespace {

bool loadable(const std::string& url) { return url.starts_with("http://") || url.starts_with("https://"); }

}  // namespace

std::optional<StateSaveSchedule::Clock::time_point> StateSaveSchedule::changed(Clock::time_point now) {
  if (armed_) return std::nullopt;
  armed_ = true;
  return now + delay_;
}

SavedThread saved_thread(const std::vector<LiveTab>& tabs, int64_t current_tab,
                         nlohmann::json ref_high_water) {
  SavedThread saved;
  for (const LiveTab& tab : tabs) {
    if (tab.tab_id <= 0) continue;
    saved.tabs.push_back(SavedTab{.tab_id = tab.tab_id,
                                  .url = loadable(tab.url) ? tab.url : std::string("about:blank"),
                                  .title = tab.title,
                                  .current = tab.tab_id == current_tab});
  }
  saved.ref_high_water = std::move(ref_high_water);
  return saved;
}

bool worth_saving(const SavedThread& thread) {
  if (!thread.tabs.empty()) return true;
  const nlohmann::json& marks = thread.ref_high_water;
  if (!marks.is_object()) return false;
  if (marks.contains("frames") && marks["frames"].is_number_integer() && marks["frames"].get<int64_t>() > 0) {
    return true;
  }
  if (marks.contains("indices") && marks["indices"].is_object()) {
    for (const auto& [ordinal, mark] : marks["indices"].items()) {
      if (mark.is_number_integer() && mark.get<int64_t>() > 0) return true;
    }
  }
  return false;
}

std::vector<ReopenTab> reopen_plan(const SavedThread& saved) {
  std::vector<ReopenTab> plan;
  bool current_seen = false;
  for (const SavedTab& tab : saved.tabs) {
    const bool current = tab.current && !current_seen;
    current_seen = current_seen || current;
    plan.push_back(ReopenTab{.old_tab = tab.tab_id,
                             .url = loadable(tab.url) ? tab.url : std::string(),
                             .title = tab.title,
                             .current = current});
  }
  if (!current_seen && !plan.empty()) plan.back().current = true;
  return plan;
}

std::string restart_notice(const std::vector<ReopenedTab>& tabs, ReopenCause cause, bool persistent_profile,
                           bool attached) {
  const bool restarted = cause == ReopenCause::kKeelRestarted;
  std::string text;
  if (restarted) {
    text = attached ? "keel restarted and attached to the browser again; this thread's tabs"
                    : "keel restarted: the browser was relaunched and this thread's tabs";
  } else {
    text = attached ? "The browser keel is attached to had gone away and keel attached to it again; this "
                      "thread's tabs"
                    : "The browser had exited and was relaunched; this thread's tabs";
  }
  text +=
      " were reloaded at their last URLs under the same tab ids (loaded again with GET; nothing was "
      "re-submitted):";
  for (const ReopenedTab& tab : tabs) {
    const std::string where = tab.url.empty() ? std::string("blank") : tab.url;
    if (!tab.opened) {
      text += "\n  tab " + std::to_string(tab.tab_id) + " (" + where +
              ") is gone: it could not be reopened (" + tab.problem + ")";
      continue;
    }
    text += "\n  tab " + std::to_string(tab.tab_id) + (tab.current ? " (current): " : ": ") + where;
    if (!tab.problem.empty()) text += " (did not load: " + tab.problem + ")";
  }
  if (tabs.empty()) text += " none";
  text += "\nThe pages were reloaded, so refs from earlier snapshots no longer work: take a new snapshot.";
  if (!persistent_profile && !attached) {
    text += std::string("\nThe browser profile is temporary: cookies and logins from before the ") +
            (restarted ? "restart" : "relaunch") + " are gone.";
  }
  return text;
}

}  // namespace keel::browser
