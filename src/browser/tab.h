// browser/tab.h — what keel knows about one tab: its frames, the session each frame's events come from, and
// keel's isolated world in each frame's current document.
//
// TabState is plain data updated from CDP events by apply(); BrowserConnection (browser_connection.h) owns
// one per page target and feeds it the events of the tab's sessions (the page's and its out-of-process
// iframes'), all on the connection's executor. apply() accepts any event: one it does not know, or one with
// missing or ill-typed fields, changes nothing (no event a page can cause throws).
//
// Besides frames it keeps what the tab's events tell a person debugging the page: the open dialog or file
// chooser (`modal`), the console and the requests that matter (documents, XHR, fetch, failures), downloads,
// navigations keel's guard blocked, title, URL and HTTP status. Every text from the page is well-formed UTF-8
// and cut (a page controls it); every list is bounded (oldest dropped), and the `*_seq` counters count
// entries ever added so that a reader can ask for what came after the last entry it saw.
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

// A JavaScript dialog or a file chooser the page opened; page commands wait until it is handled.
struct ModalState {
  enum class Kind { kDialog, kFileChooser };
  Kind kind = Kind::kDialog;
  std::string dialog_type;  // "alert" | "confirm" | "prompt" | "beforeunload"
  std::string message;      // well-formed UTF-8, cut to kMaxDialogMessageBytes
  std::string default_prompt;
  std::string url;  // the document that opened it
  std::string
      session_id;  // the session whose Page.javascriptDialogOpening / Page.fileChooserOpened it came from
  std::string frame_id;
  int64_t backend_node_id = 0;  // file chooser: the <input type=file>
  bool multiple = false;        // file chooser mode "selectMultiple"
  int64_t id = 0;               // which opening this is (TabState::modals_opened), to tell two alike apart
};

struct ConsoleEntry {
  int64_t seq = 0;    // 1, 2, ... in the order added (TabState::console_seq)
  std::string level;  // log | info | warning | error | debug; an uncaught exception is "error"
  std::string text;   // well-formed UTF-8, cut to kMaxConsoleTextBytes
  std::string url;
};

struct NetworkEntry {
  int64_t seq = 0;  // TabState::network_seq
  std::string request_id, method, url, resource_type;
  int status = 0;
  std::string failure;  // Network.loadingFailed's errorText, or "blocked by keel: <reason>"
  bool finished = false;
};

struct DownloadEntry {
  std::string guid, url, suggested_filename;
  std::string state;  // inProgress | completed | canceled
  int64_t received_bytes = 0, total_bytes = 0;
};

// A document request or a committed document keel's navigation guard refused.
struct BlockedNavigation {
  std::string url;
  std::string reason;
  std::string frame_id;
};

inline constexpr size_t kMaxDialogMessageBytes = 1000;
inline constexpr size_t kMaxConsoleTextBytes = 2000;
inline constexpr size_t kMaxConsoleEntries = 500;
inline constexpr size_t kMaxNetworkEntries = 500;
inline constexpr size_t kMaxDownloads = 50;
inline constexpr size_t kMaxBlocked = 50;

struct TabState {
  int64_t tab_id = 0;
  std::string target_id;   // the page target
  std::string session_id;  // the page target's session
  std::map<std::string, FrameState> frames;
  bool crashed = false;
  bool closed = false;

  std::string title;
  std::string url;      // the main frame's committed URL
  int http_status = 0;  // the main document's last response status (0: none, e.g. about:blank)
  std::optional<ModalState> modal;
  int64_t modals_opened = 0;               // dialogs and choosers that became `modal`
  int64_t auto_dismissed_dialogs = 0;      // dialogs keel dismissed itself (a dialog loop)
  std::deque<ConsoleEntry> console;        // at most kMaxConsoleEntries, oldest dropped
  std::deque<NetworkEntry> network;        // at most kMaxNetworkEntries
  int64_t console_seq = 0;                 // console entries ever added
  int64_t network_seq = 0;                 // network entries ever added
  std::vector<DownloadEntry> downloads;    // at most kMaxDownloads
  std::vector<BlockedNavigation> blocked;  // at most kMaxBlocked
  int64_t opener_tab = 0;                  // the tab that opened this one (a popup), 0 = none
  int64_t navigations = 0;                 // main-frame commits
  int64_t change_seq = 0;                  // bumped on every change of this state

  // The main frame (the one without a parent), if known yet.
  const FrameState* main_frame() const;
  const FrameState* frame(const std::string& frame_id) const;

  // Updates the state from one event of `event.session_id`: frames (Page.frameAttached/Navigated/Detached,
  // Page.navigatedWithinDocument, Runtime.executionContextCreated/Destroyed/Cleared), the modal state
  // (Page.javascriptDialogOpening/Closed, Page.fileChooserOpened; a main-frame commit clears it), the console
  // (Runtime.consoleAPICalled, Runtime.exceptionThrown) and the network log (Network.requestWillBeSent,
  // responseReceived, loadingFinished, loadingFailed: Document, XHR and Fetch requests, and failed requests
  // of any type). Returns whether anything changed (and then bumps change_seq).
  bool apply(const CdpEvent& event);

  // Title and URL from a Target.targetInfoChanged's targetInfo of this tab's target.
  bool apply_target_info(const nlohmann::json& target_info);
  // Browser.downloadWillBegin (a download of this tab's frames) or Browser.downloadProgress (of one of this
  // tab's downloads; another guid changes nothing).
  bool apply_download(const CdpEvent& event);
  // A navigation the guard refused: in `blocked`, and in the network log as a failure (the entry of
  // `request_id`, the Network requestId, when it is there; a new one otherwise).
  void record_blocked(std::string url, std::string reason, std::string frame_id, std::string request_id = "");
  // A dialog keel dismissed itself instead of making it the modal state (the dialog-loop rule): counted, and
  // its Page.javascriptDialogClosed will not clear the modal state.
  void note_dismissed_dialog(const std::string& session_id);
  // Bumps change_seq (a change made from outside apply*).
  void touch() { ++change_seq; }

  // Records the frames of a Page.getFrameTree result (the frames that existed before Page.enable) as
  // belonging to `session_id`. Returns whether anything changed.
  bool seed_frames(const nlohmann::json& frame_tree, const std::string& session_id, bool oopif_root);

  // A frame's events now come from an out-of-process iframe's session (Target.attachedToTarget of type
  // iframe, whose targetId is the frame id).
  void adopt_oopif(const std::string& frame_id, const std::string& session_id);

  // Removes every frame of `session_id` (the session detached). Returns whether anything changed.
  bool drop_session(const std::string& session_id);

 private:
  bool apply_frames(const CdpEvent& event);
  bool apply_modal(const CdpEvent& event);
  bool apply_console(const CdpEvent& event);
  bool apply_network(const CdpEvent& event);
  NetworkEntry* network_entry(const std::string& request_id);
  void add_network(NetworkEntry entry);

  // Requests of other types than Document/XHR/Fetch, remembered until they end so that a failure can be
  // logged with its URL (bounded like the log).
  // Per session, the dialogs opened and not closed yet, oldest first (ModalState::id, 0 = one keel
  // dismissed). Dialogs of a session come one at a time, but Chromium may report the next one's opening
  // before the previous one's close: a close clears the modal state only when it is that dialog's.
  std::map<std::string, std::deque<int64_t>> open_dialogs_;
  std::map<std::string, NetworkEntry> unlisted_requests_;
  std::deque<std::string> unlisted_order_;
  // The loader of the main document's last response, so that a commit without one (about:blank) resets
  // http_status.
  std::string main_response_loader_;
};

}  // namespace keel::browser
