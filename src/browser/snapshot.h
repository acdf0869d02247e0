// browser/snapshot.h — from the page scripts' per-frame outlines to the snapshot text the model reads.
//
// A snapshot runs __keel.snapshot in every frame of a tab (scripts/snapshot.js; the call itself is the CDP
// layer's job). This unit is the pure part after it, so it is tested from recorded JSON without a browser:
//   - parse_frame_outline: checks one frame's result (a bad one is browser.bad_script_result, never a crash);
//   - merge_frames: splices each child frame's outline under its iframe's line, one level deeper;
//   - issue_refs: records the refs of a frame in the thread's RefTable;
//   - scope_outline: {ref} (a subtree), {depth} (structural levels), {find} (matching lines with their
//     ancestors);
//   - render_outline: the bounded text — a header line, then lines within max_chars, viewport first (lines in
//     the viewport and their ancestors, then the rest in document order), cut at a line boundary, with a
//     notice saying how many refs were left out and how to reach them;
//   - ref_boxes / outline_text / diff_outlines: boxes in the main viewport, the full outline and a line diff
//     for the details.
// Line format and rules: docs/browser.md, "Page scripts, snapshot and refs". Pure functions (issue_refs
// writes to the table it is given, which is thread-safe); any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "browser/ref_table.h"
#include "keel/error.h"

namespace keel::browser {

struct FrameRef {
  int64_t index = 0;  // in the frame world's registry
  std::string role;
  std::string name;
  size_t line = 0;                // in FrameOutline::lines
  std::array<int64_t, 4> rect{};  // x, y, width, height in the frame's viewport (CSS px)
  bool in_viewport = false;
};

struct FrameIframe {
  int64_t index = 0;  // the iframe element's registry index (it has a ref)
  size_t line = 0;
};

// One frame's result of __keel.snapshot.
struct FrameOutline {
  std::string url;
  std::string title;
  std::vector<std::string> lines;
  std::vector<bool> in_view;  // one per line
  std::vector<FrameRef> refs;
  std::vector<FrameIframe> iframes;
  bool truncated = false;        // the page walk stopped early (node or time budget)
  std::string truncated_reason;  // "stopped after 200000 elements"
  int64_t next_index = 1;        // the world's next unused index
  int64_t elements = 0;          // elements visited
  int64_t elapsed_ms = 0;
};

// Limits on what keel accepts from a page script (a frame's outline is bounded by the script's own budget;
// these catch a broken script).
inline constexpr size_t kMaxOutlineLines = 1'000'000;

Result<FrameOutline> parse_frame_outline(const nlohmann::json& result);

// A frame and the frames inside it, each under the iframe element (by registry index) it belongs to.
struct ChildFrame;
struct FrameTree {
  FrameOutline outline;
  std::string ref_prefix = "e";  // the prefix the frame's refs were given ("e", "f2e"): ref = prefix + index
  std::vector<ChildFrame> children;
};
struct ChildFrame {
  int64_t iframe_index = 0;  // FrameIframe::index in the parent outline
  // Where the child's viewport starts in the parent's (the iframe's content box: DOM.getBoxModel of the
  // owner for an out-of-process frame). Unset: the iframe element's box origin, off by its border and
  // padding.
  std::optional<std::array<int64_t, 2>> content_origin;
  FrameTree tree;
};

struct OutlineLine {
  std::string text;        // without indentation
  size_t columns = 0;      // indent width; a list marker counts as its two columns
  bool list_item = false;  // the line starts a list item: its indent ends in "- "
  int level = 0;           // structural nesting: how many lines it is nested under
  bool in_view = false;    // in the main viewport (a child frame's line: in its frame's and the iframe's)
  bool is_ref = false;

  std::string indent() const;  // the spaces and marker to print before `text`
};

struct Outline {
  std::vector<OutlineLine> lines;
  size_t ref_count = 0;
  std::vector<std::string> notes;  // one per truncated frame walk, and per child frame without an iframe line
};

// The frames as one outline. A child whose iframe line is missing (the iframe is hidden or was not walked)
// is left out and noted.
Outline merge_frames(const FrameTree& tree);

// Issues a ref for every ref of `outline` (RefTable::issue with `base` plus each index). Stops at the first
// refusal.
Result<void> issue_refs(RefTable& table, const FrameOutline& outline, const RefKey& base);

struct OutlineScope {
  std::optional<std::string> ref;   // only this ref's line and the lines nested under it
  std::optional<int> depth;         // only lines at most this many levels deep (0 = top level)
  std::optional<std::string> find;  // only lines containing this text (case-insensitive) and their ancestors
};

// browser.unknown_ref when `scope.ref` is not in the outline.
Result<Outline> scope_outline(const Outline& outline, const OutlineScope& scope);

struct RenderOptions {
  size_t max_chars = 12'000;   // counted in UTF-8 bytes: never more characters, fewer for non-Latin text
  bool viewport_first = true;  // false: document order from the top (mode "full")
  std::string title;
  std::string url;
  int64_t tab_id = 0;
};

struct RenderedSnapshot {
  std::string text;
  size_t shown_refs = 0;
  size_t total_refs = 0;
  size_t omitted_lines = 0;
};

RenderedSnapshot render_outline(const Outline& outline, const RenderOptions& options);

// A ref's box in the main frame's viewport (CSS px), for the details (screenshots, L2 input).
struct RefBox {
  std::string ref;
  int64_t x = 0;
  int64_t y = 0;
  int64_t width = 0;
  int64_t height = 0;
};

// The boxes of every ref of the tree, child frames' offset by their iframes' origins; refs of a child frame
// whose iframe is not in its parent's outline are left out (they are not shown either).
std::vector<RefBox> ref_boxes(const FrameTree& tree);

// Every line, indented, joined by '\n', cut at a line boundary before `max_bytes` (with a final "…" line).
std::string outline_text(const Outline& outline, size_t max_bytes);

// Lines removed ("- …") and added ("+ …") from `before` to `after`, in order, at most `max_lines` of them
// (then a "… n more changes" line). Empty when they are equal.
std::string diff_outlines(const std::vector<std::string>& before, const std::vector<std::string>& after,
                          size_t max_lines);

// 12345 -> "12,345" (counts in notices).
std::string thousands(size_t value);

}  // namespace keel::browser
