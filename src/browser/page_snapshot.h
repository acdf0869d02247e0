// browser/page_snapshot.h — a tab's snapshot as the model reads it, and the refs it issues.
//
// take_snapshot runs __keel.snapshot in keel's world of every frame of the tab (main frame first, then its
// iframes, same- and cross-origin, each in its own session), puts every child frame's outline under the
// line of the <iframe> element that holds it (matched by DOM node: DOM.getFrameOwner of the child against
// the iframe element's backendNodeId), issues the refs in the thread's RefTable keyed to tab, target,
// session, frame, document loader and world, and renders the bounded text (snapshot.h).
//
// Guarantees: the text is at most `max_chars` bytes plus its header; what was left out is said in a notice;
// details carry the full outline (at most 1 MiB), the line diff against this thread's previous snapshot of
// the tab, and every shown ref's box in the main viewport. A frame whose script fails is left out with a
// note (a page cannot make a snapshot fail by breaking one iframe); a main frame that fails fails the call.
//
// Runtime thread only (BrowserRuntime).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "browser/browser_runtime.h"
#include "browser/snapshot.h"
#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::browser {

struct SnapshotRequest {
  int64_t tab_id = 0;
  bool full = false;  // document order from the top instead of viewport first
  size_t max_chars = 12'000;
  OutlineScope scope;
};

struct PageSnapshot {
  std::string text;        // for the model
  nlohmann::json details;  // for the UI: outline, diff, boxes, counts, timing
  size_t refs = 0;
};

// Parameters by value (coroutine).
boost::asio::awaitable<Result<PageSnapshot>> take_snapshot(std::shared_ptr<BrowserThread> thread,
                                                           SnapshotRequest request, CancellationToken cancel);

}  // namespace keel::browser
