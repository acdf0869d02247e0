// browser/tab.h — what keel knows about one tab: its frames, the session each frame's events come from, and
// keel's isolated world in each frame's current document.
//
// TabState is plain data updated from CDP events by apply(); BrowserConnection (browser_connection.h) owns
// one per page target and feeds it the events of the tab's sessions (the page's and its out-of-process
// iframes'), all on the connection's executor. apply() accepts any event: one it does not know, or one with
// missing or ill-typed fields, changes nothing (no event a page can cause throws).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "browser/cdp/cdp_client.h"

namespace keel::browser {

// The name of keel's isolated world in every frame (Page.addScriptToEvaluateOnNewDocument{worldName}).
inline constexpr std::string_view kWorldName = "keel";

struct FrameState {
  std::string frame_id;
  std::string parent_frame_id;  // "" for the tab's main frame
  std::string session_id;       // the session whose events describe this frame (an OOPIF has its own)
  std::string url;
  std::string origin;            // securityOrigin of the committed document
  std::string loader_id;         // the committed document; a navigation changes it
  bool oopif = false;            // the frame's document runs in its own target (an out-of-process iframe)
  int64_t world_context_id = 0;  // keel's world in this document, in session_id's numbering; 0 = none yet
  int64_t world_generation = 0;  // counts the worlds this frame has had (a new one per document)
};

struct ModalState {
  enum class Kind { kDialog, kFileChooser };
  Kind kind = Kind::kDialog;
  std::string dialog_type;  // "alert" | "confirm" | "prompt" | "beforeunload"
  std::string message;
  std::string default_prompt;
  std::string url;
  std::string session_id;
  std::string frame_id;
  int64_t backend_node_id = 0;  // file chooser: the <input type=file>
  bool multiple = false;
};
struct ConsoleEntry {
  int64_t seq = 0;
  std::string level;
  std::string text;
  std::string url;
};
struct NetworkEntry {
  int64_t seq = 0;
  std::string request_id, method, url, resource_type;
  int status = 0;
  std::string failure;
  bool finished = false;
};
struct DownloadEntry {
  std::string guid, url, suggested_filename, state;
  int64_t received_bytes = 0, total_bytes = 0;
};
struct BlockedNavigation {
  std::string url;
  std::string reason;
  std::string frame_id;
};

struct TabState {
  int64_t tab_id = 0;
  std::string target_id;   // the page target
  std::string session_id;  // the page target's session
  std::map<std::string, FrameState> frames;
  bool crashed = false;
  bool closed = false;
  std::string title;
  std::string url;
  int http_status = 0;
  std::optional<ModalState> modal;
  int64_t auto_dismissed_dialogs = 0;
  std::deque<ConsoleEntry> console;
  std::deque<NetworkEntry> network;
  int64_t console_seq = 0;
  int64_t network_seq = 0;
  std::vector<DownloadEntry> downloads;
  std::vector<BlockedNavigation> blocked;
  int64_t opener_tab = 0;
  int64_t navigations = 0;
  int64_t change_seq = 0;

  // The main frame (the one without a parent), if known yet.
  const FrameState* main_frame() const;
  const FrameState* frame(const std::string& frame_id) const;

  // Updates frames from one event of `event.session_id` (Page.frameAttached/Navigated/Detached,
  // Page.navigatedWithinDocument, Runtime.executionContextCreated/Destroyed,
  // Runtime.executionContextsCleared). Returns whether anything changed.
  bool apply(const CdpEvent& event);

  // Records the frames of a Page.getFrameTree result (the frames that existed before Page.enable) as
  // belonging to `session_id`. Returns whether anything changed.
  bool seed_frames(const nlohmann::json& frame_tree, const std::string& session_id, bool oopif_root);

  // A frame's events now come from an out-of-process iframe's session (Target.attachedToTarget of type
  // iframe, whose targetId is the frame id).
  void adopt_oopif(const std::string& frame_id, const std::string& session_id);

  // Removes every frame of `session_id` (the session detached). Returns whether anything changed.
  bool drop_session(const std::string& session_id);
};

}  // namespace keel::browser
