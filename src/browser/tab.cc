#include "browser/tab.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "util/utf8.h"

namespace keel::browser {
namespace {

using nlohmann::json;

// A string field of an object, or "" when the object or the field is missing or not a string.
std::string text_of(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

int64_t integer_of(const json& object, const char* key) {
  if (!object.is_object()) return 0;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return 0;
  return it->get<int64_t>();
}

const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

// Page text made safe to keep: each byte that begins no valid UTF-8 character becomes U+FFFD, and the result
// is cut at a character boundary to at most `max_bytes` (an ellipsis marks the cut).
std::string page_text(std::string_view text, size_t max_bytes) {
  constexpr std::string_view kEllipsis = "\u2026";
  std::string clean = utf8_sanitized(std::string(text));
  if (clean.size() <= max_bytes) return clean;
  clean.resize(utf8_prefix_length(clean, max_bytes - kEllipsis.size()));
  clean += kEllipsis;
  return clean;
}

// A console argument (a Runtime.RemoteObject) as text: a string's value, a primitive's JSON, else the
// description Chromium gives it.
std::string remote_object_text(const json& object) {
  const json& value = member(object, "value");
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_null() && !value.is_object() && !value.is_array()) return value.dump();
  std::string text = text_of(object, "unserializableValue");
  if (text.empty()) text = text_of(object, "description");
  if (text.empty()) text = text_of(object, "type");
  return text;
}

// Runtime.consoleAPICalled's type as one of the levels ConsoleEntry names.
std::string console_level(const std::string& type) {
  if (type == "error" || type == "assert") return "error";
  if (type == "warning") return "warning";
  if (type == "info") return "info";
  if (type == "debug") return "debug";
  return "log";
}

std::string first_frame_url(const json& stack_trace) {
  const json& frames = member(stack_trace, "callFrames");
  if (!frames.is_array() || frames.empty()) return {};
  return text_of(frames.front(), "url");
}

// Dialogs of one session awaiting their close event; more means events were lost (kept bounded anyway).
constexpr size_t kMaxOpenDialogs = 16;

bool listed_type(const std::string& type) { return type == "Document" || type == "XHR" || type == "Fetch"; }

// The entries of a bounded log past its limit, oldest first.
template <typename Container>
void keep_last(Container& entries, size_t limit) {
  while (entries.size() > limit) entries.erase(entries.begin());
}

}  // namespace

const FrameState* TabState::frame(const std::string& frame_id) const {
  auto it = frames.find(frame_id);
  return it == frames.end() ? nullptr : &it->second;
}

const FrameState* TabState::main_frame() const {
  // Chromium gives a page target's main frame the target's id.
  if (const FrameState* by_target = frame(target_id)) return by_target;
  for (const auto& [id, state] : frames) {
    if (state.parent_frame_id.empty() && state.session_id == session_id) return &state;
  }
  return nullptr;
}

bool TabState::apply(const CdpEvent& event) {
  const bool changed =
      apply_frames(event) || apply_modal(event) || apply_console(event) || apply_network(event);
  if (changed) ++change_seq;
  return changed;
}

bool TabState::apply_frames(const CdpEvent& event) {
  const json& params = event.params;
  const std::string& session = event.session_id;
  if (event.method == "Page.frameAttached") {
    const std::string id = text_of(params, "frameId");
    if (id.empty() || frames.contains(id)) return false;
    FrameState state;
    state.frame_id = id;
    state.parent_frame_id = text_of(params, "parentFrameId");
    state.session_id = session;
    state.oopif = session != session_id;
    frames.emplace(id, std::move(state));
    return true;
  }
  if (event.method == "Page.frameNavigated") {
    const json& described = member(params, "frame");
    const std::string id = text_of(described, "id");
    if (id.empty()) return false;
    FrameState& state = frames[id];
    state.frame_id = id;
    const std::string parent = text_of(described, "parentId");
    if (!parent.empty()) state.parent_frame_id = parent;
    state.session_id = session;
    state.oopif = session != session_id;
    state.url = text_of(described, "url") + text_of(described, "urlFragment");
    state.origin = text_of(described, "securityOrigin");
    state.loader_id = text_of(described, "loaderId");
    if (state.parent_frame_id.empty() && session == session_id) {
      // A new main document: what the old one showed or asked is gone with it.
      url = state.url;
      ++navigations;
      modal.reset();
      open_dialogs_.clear();
      if (state.loader_id != main_response_loader_) http_status = 0;
    }
    return true;
  }
  if (event.method == "Page.navigatedWithinDocument") {
    auto it = frames.find(text_of(params, "frameId"));
    if (it == frames.end()) return false;
    it->second.url = text_of(params, "url");
    if (it->second.parent_frame_id.empty() && it->second.session_id == session_id) url = it->second.url;
    return true;
  }
  if (event.method == "Page.frameDetached") {
    const std::string id = text_of(params, "frameId");
    // "swap": the frame lives on in another process, and its own target's session describes it from now on.
    if (text_of(params, "reason") == "swap" || !frames.contains(id)) return false;
    std::vector<std::string> gone{id};
    for (size_t i = 0; i < gone.size(); ++i) {
      for (const auto& [child_id, child] : frames) {
        if (child.parent_frame_id == gone[i]) gone.push_back(child_id);
      }
    }
    for (const std::string& frame_id : gone) frames.erase(frame_id);
    return true;
  }
  if (event.method == "Runtime.executionContextCreated") {
    const json& context = member(params, "context");
    if (text_of(context, "name") != kWorldName) return false;
    const std::string id = text_of(member(context, "auxData"), "frameId");
    const int64_t context_id = integer_of(context, "id");
    if (id.empty() || context_id == 0) return false;
    FrameState& state = frames[id];
    state.frame_id = id;
    state.session_id = session;
    state.oopif = session != session_id;
    state.world_context_id = context_id;
    ++state.world_generation;
    return true;
  }
  if (event.method == "Runtime.executionContextDestroyed") {
    const int64_t context_id = integer_of(params, "executionContextId");
    bool changed = false;
    for (auto& [id, state] : frames) {
      if (state.session_id == session && state.world_context_id == context_id && context_id != 0) {
        state.world_context_id = 0;
        changed = true;
      }
    }
    return changed;
  }
  if (event.method == "Runtime.executionContextsCleared") {
    bool changed = false;
    for (auto& [id, state] : frames) {
      if (state.session_id == session && state.world_context_id != 0) {
        state.world_context_id = 0;
        changed = true;
      }
    }
    return changed;
  }
  return false;
}

bool TabState::apply_modal(const CdpEvent& event) {
  const json& params = event.params;
  if (event.method == "Page.javascriptDialogOpening") {
    const std::string type = text_of(params, "type");
    if (type != "alert" && type != "confirm" && type != "prompt" && type != "beforeunload") return false;
    ModalState opened;
    opened.kind = ModalState::Kind::kDialog;
    opened.dialog_type = type;
    opened.message = page_text(text_of(params, "message"), kMaxDialogMessageBytes);
    opened.default_prompt = page_text(text_of(params, "defaultPrompt"), kMaxDialogMessageBytes);
    opened.url = page_text(text_of(params, "url"), kMaxConsoleTextBytes);
    opened.session_id = event.session_id;
    opened.frame_id = text_of(params, "frameId");
    opened.id = ++modals_opened;
    std::deque<int64_t>& open = open_dialogs_[event.session_id];
    open.push_back(opened.id);
    keep_last(open, kMaxOpenDialogs);
    modal = std::move(opened);
    return true;
  }
  if (event.method == "Page.javascriptDialogClosed") {
    auto open = open_dialogs_.find(event.session_id);
    if (open == open_dialogs_.end() || open->second.empty()) return false;
    const int64_t closing = open->second.front();
    open->second.pop_front();
    if (!modal || modal->kind != ModalState::Kind::kDialog || modal->id != closing) return false;
    modal.reset();
    return true;
  }
  if (event.method == "Page.fileChooserOpened") {
    const std::string mode = text_of(params, "mode");
    if (mode != "selectSingle" && mode != "selectMultiple") return false;
    ModalState opened;
    opened.kind = ModalState::Kind::kFileChooser;
    opened.session_id = event.session_id;
    opened.frame_id = text_of(params, "frameId");
    opened.backend_node_id = integer_of(params, "backendNodeId");
    opened.multiple = mode == "selectMultiple";
    if (const FrameState* opener = frame(opened.frame_id)) opened.url = opener->url;
    opened.id = ++modals_opened;
    modal = std::move(opened);
    return true;
  }
  return false;
}

bool TabState::apply_console(const CdpEvent& event) {
  const json& params = event.params;
  ConsoleEntry entry;
  if (event.method == "Runtime.consoleAPICalled") {
    const json& args = member(params, "args");
    const std::string type = text_of(params, "type");
    if (type.empty() || !args.is_array()) return false;
    entry.level = console_level(type);
    std::string text;
    for (const json& arg : args) {
      if (!text.empty()) text += ' ';
      text += remote_object_text(arg);
      if (text.size() > kMaxConsoleTextBytes * 2) break;  // the rest is cut anyway
    }
    entry.text = page_text(text, kMaxConsoleTextBytes);
    entry.url = page_text(first_frame_url(member(params, "stackTrace")), kMaxConsoleTextBytes);
  } else if (event.method == "Runtime.exceptionThrown") {
    const json& details = member(params, "exceptionDetails");
    if (!details.is_object()) return false;
    std::string text = text_of(member(details, "exception"), "description");
    if (text.empty()) text = text_of(details, "text");
    entry.level = "error";
    entry.text = page_text(text, kMaxConsoleTextBytes);
    std::string where = text_of(details, "url");
    if (where.empty()) where = first_frame_url(member(details, "stackTrace"));
    entry.url = page_text(where, kMaxConsoleTextBytes);
  } else {
    return false;
  }
  entry.seq = ++console_seq;
  console.push_back(std::move(entry));
  keep_last(console, kMaxConsoleEntries);
  return true;
}

NetworkEntry* TabState::network_entry(const std::string& request_id) {
  for (auto it = network.rbegin(); it != network.rend(); ++it) {
    if (it->request_id == request_id) return &*it;
  }
  return nullptr;
}

void TabState::add_network(NetworkEntry entry) {
  entry.seq = ++network_seq;
  network.push_back(std::move(entry));
  keep_last(network, kMaxNetworkEntries);
}

bool TabState::apply_network(const CdpEvent& event) {
  const json& params = event.params;
  const std::string request_id = text_of(params, "requestId");
  if (!event.method.starts_with("Network.") || request_id.empty()) return false;
  if (event.method == "Network.requestWillBeSent") {
    const json& request = member(params, "request");
    NetworkEntry entry;
    entry.request_id = request_id;
    entry.method = page_text(text_of(request, "method"), 16);
    entry.url = page_text(text_of(request, "url"), kMaxConsoleTextBytes);
    entry.resource_type = text_of(params, "type");
    if (entry.url.empty()) return false;
    NetworkEntry* hop = network_entry(request_id);
    const json& redirect = member(params, "redirectResponse");
    if (hop != nullptr && redirect.is_object()) {
      // A redirect keeps the request id: the hop ends here with the redirect's status.
      hop->status = static_cast<int>(integer_of(redirect, "status"));
      hop->finished = true;
    }
    if (!listed_type(entry.resource_type)) {
      if (!unlisted_requests_.contains(request_id)) unlisted_order_.push_back(request_id);
      unlisted_requests_[request_id] = std::move(entry);
      while (unlisted_order_.size() > kMaxNetworkEntries) {
        unlisted_requests_.erase(unlisted_order_.front());
        unlisted_order_.pop_front();
      }
      return false;
    }
    add_network(std::move(entry));
    return true;
  }
  if (event.method == "Network.responseReceived") {
    const json& response = member(params, "response");
    if (!member(response, "status").is_number_integer()) return false;
    const int status = static_cast<int>(integer_of(response, "status"));
    const std::string frame_id = text_of(params, "frameId");
    const FrameState* main = main_frame();
    const bool main_document = text_of(params, "type") == "Document" && !frame_id.empty() &&
                               (frame_id == target_id || (main != nullptr && frame_id == main->frame_id));
    if (main_document) {
      http_status = status;
      main_response_loader_ = text_of(params, "loaderId");
    }
    NetworkEntry* entry = network_entry(request_id);
    if (entry != nullptr) entry->status = status;
    auto unlisted = unlisted_requests_.find(request_id);
    if (unlisted != unlisted_requests_.end()) unlisted->second.status = status;
    return entry != nullptr || main_document;
  }
  if (event.method == "Network.loadingFinished") {
    unlisted_requests_.erase(request_id);
    std::erase(unlisted_order_, request_id);
    NetworkEntry* entry = network_entry(request_id);
    if (entry == nullptr || entry->finished) return false;
    entry->finished = true;
    return true;
  }
  if (event.method == "Network.loadingFailed") {
    const std::string error_text = page_text(text_of(params, "errorText"), 200);
    NetworkEntry* entry = network_entry(request_id);
    if (entry == nullptr) {
      NetworkEntry failed;
      auto unlisted = unlisted_requests_.find(request_id);
      if (unlisted != unlisted_requests_.end()) {
        failed = std::move(unlisted->second);
        unlisted_requests_.erase(unlisted);
        std::erase(unlisted_order_, request_id);
      } else {
        failed.request_id = request_id;
        failed.resource_type = text_of(params, "type");
      }
      failed.failure = error_text.empty() ? "failed" : error_text;
      failed.finished = true;
      add_network(std::move(failed));
      return true;
    }
    entry->finished = true;
    // keel's own refusal says more than the net::ERR_BLOCKED_BY_CLIENT it causes.
    if (!entry->failure.starts_with("blocked by keel"))
      entry->failure = error_text.empty() ? "failed" : error_text;
    return true;
  }
  return false;
}

bool TabState::apply_target_info(const json& target_info) {
  if (text_of(target_info, "targetId") != target_id) return false;
  const std::string new_title = page_text(text_of(target_info, "title"), kMaxDialogMessageBytes);
  const std::string new_url = page_text(text_of(target_info, "url"), kMaxConsoleTextBytes);
  bool changed = false;
  if (member(target_info, "title").is_string() && new_title != title) {
    title = new_title;
    changed = true;
  }
  if (!new_url.empty() && new_url != url) {
    url = new_url;
    changed = true;
  }
  if (changed) ++change_seq;
  return changed;
}

bool TabState::apply_download(const CdpEvent& event) {
  const json& params = event.params;
  const std::string guid = text_of(params, "guid");
  if (guid.empty()) return false;
  auto known = std::find_if(downloads.begin(), downloads.end(),
                            [&](const DownloadEntry& entry) { return entry.guid == guid; });
  if (event.method == "Browser.downloadWillBegin") {
    if (known != downloads.end()) return false;
    DownloadEntry entry;
    entry.guid = guid;
    entry.url = page_text(text_of(params, "url"), kMaxConsoleTextBytes);
    entry.suggested_filename = page_text(text_of(params, "suggestedFilename"), 255);
    entry.state = "inProgress";
    downloads.push_back(std::move(entry));
    keep_last(downloads, kMaxDownloads);
    ++change_seq;
    return true;
  }
  if (event.method == "Browser.downloadProgress") {
    const std::string state = text_of(params, "state");
    if (known == downloads.end() || (state != "inProgress" && state != "completed" && state != "canceled")) {
      return false;
    }
    known->state = state;
    // Chromium sends byte counts as numbers that may be doubles.
    const json& received = member(params, "receivedBytes");
    const json& total = member(params, "totalBytes");
    if (received.is_number()) known->received_bytes = static_cast<int64_t>(received.get<double>());
    if (total.is_number()) known->total_bytes = static_cast<int64_t>(total.get<double>());
    ++change_seq;
    return true;
  }
  return false;
}

void TabState::note_dismissed_dialog(const std::string& session) {
  std::deque<int64_t>& open = open_dialogs_[session];
  open.push_back(0);
  keep_last(open, kMaxOpenDialogs);
  ++auto_dismissed_dialogs;
  ++change_seq;
}

void TabState::record_blocked(std::string blocked_url, std::string reason, std::string frame_id,
                              std::string request_id) {
  const std::string failure = "blocked by keel: " + reason;
  NetworkEntry* entry = request_id.empty() ? nullptr : network_entry(request_id);
  if (entry != nullptr) {
    entry->failure = failure;
    entry->finished = true;
  } else {
    NetworkEntry logged;
    logged.request_id = request_id;
    logged.method = "GET";
    logged.url = page_text(blocked_url, kMaxConsoleTextBytes);
    logged.resource_type = "Document";
    logged.failure = failure;
    logged.finished = true;
    add_network(std::move(logged));
  }
  BlockedNavigation refused;
  refused.url = page_text(blocked_url, kMaxConsoleTextBytes);
  refused.reason = std::move(reason);
  refused.frame_id = std::move(frame_id);
  blocked.push_back(std::move(refused));
  keep_last(blocked, kMaxBlocked);
  ++change_seq;
}

bool TabState::seed_frames(const json& frame_tree, const std::string& session, bool oopif_root) {
  const json& described = member(frame_tree, "frame");
  const std::string id = text_of(described, "id");
  if (id.empty()) return false;
  FrameState& state = frames[id];
  state.frame_id = id;
  const std::string parent = text_of(described, "parentId");
  if (!parent.empty()) state.parent_frame_id = parent;
  state.session_id = session;
  state.oopif = oopif_root || session != session_id;
  // A navigation event that came first is newer than this answer.
  if (state.loader_id.empty()) {
    state.url = text_of(described, "url") + text_of(described, "urlFragment");
    state.origin = text_of(described, "securityOrigin");
    state.loader_id = text_of(described, "loaderId");
    if (state.parent_frame_id.empty() && !state.oopif && url.empty()) url = state.url;
  }
  const json& children = member(frame_tree, "childFrames");
  if (children.is_array()) {
    for (const json& child : children) seed_frames(child, session, false);
  }
  return true;
}

void TabState::adopt_oopif(const std::string& frame_id, const std::string& session) {
  ++change_seq;
  FrameState& state = frames[frame_id];
  state.frame_id = frame_id;
  state.session_id = session;
  state.oopif = true;
  state.world_context_id = 0;  // the world of the in-process document is gone with it
}

bool TabState::drop_session(const std::string& session) {
  bool changed =
      std::erase_if(frames, [&](const auto& entry) { return entry.second.session_id == session; }) > 0;
  open_dialogs_.erase(session);
  if (modal && modal->session_id == session) {
    modal.reset();
    changed = true;
  }
  if (changed) ++change_seq;
  return changed;
}

}  // namespace keel::browser
