#include "browser/page_snapshot.h"

#include <chrono>
#include <utility>
#include <vector>

#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/dom_nodes.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

constexpr size_t kDetailsOutlineBytes = size_t{1} << 20;
constexpr size_t kDiffLines = 200;

struct FrameResult {
  std::string frame_id;
  std::string parent_frame_id;
  std::string session_id;
  int64_t ordinal = 0;
  std::optional<FrameOutline> outline;  // unset: the frame's script failed (`error` says why)
  std::string error;
};

std::string prefix_of(int64_t ordinal) { return ordinal == 0 ? "e" : "f" + std::to_string(ordinal) + "e"; }

std::vector<std::string> outline_lines(const Outline& outline) {
  std::vector<std::string> lines;
  lines.reserve(outline.lines.size());
  for (const OutlineLine& line : outline.lines) lines.push_back(line.indent() + line.text);
  return lines;
}

// Builds the tree under `frame_id` from the frames that have outlines; children are matched to their
// iframe lines through `owners` (child frame id -> registry index of its <iframe> in the parent).
FrameTree build_tree(const std::vector<FrameResult>& frames, size_t at,
                     const std::map<std::string, int64_t>& owners,
                     const std::map<std::string, std::array<int64_t, 2>>& origins,
                     std::vector<std::string>& notes) {
  FrameTree tree;
  tree.outline = *frames[at].outline;
  tree.ref_prefix = prefix_of(frames[at].ordinal);
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].parent_frame_id != frames[at].frame_id) continue;
    if (!frames[i].outline) {
      notes.push_back("a frame was left out: " + frames[i].error);
      continue;
    }
    auto owner = owners.find(frames[i].frame_id);
    if (owner == owners.end())
      continue;  // hidden or not walked: merge_frames would note it; say nothing more
    ChildFrame child;
    child.iframe_index = owner->second;
    auto origin = origins.find(frames[i].frame_id);
    if (origin != origins.end()) child.content_origin = origin->second;
    child.tree = build_tree(frames, i, owners, origins, notes);
    tree.children.push_back(std::move(child));
  }
  return tree;
}

}  // namespace

asio::awaitable<Result<PageSnapshot>> take_snapshot(std::shared_ptr<BrowserThread> thread,
                                                    SnapshotRequest request, CancellationToken cancel) {
  const auto started = std::chrono::steady_clock::now();
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  if (!connection) co_return fail(codes::kBrowserCrashed, "the browser is not running");
  const std::chrono::milliseconds timeout = thread->runtime().options().command_timeout;
  const TabState* tab = connection->tab(request.tab_id);
  if (tab == nullptr)
    co_return fail(codes::kBrowserNoSuchTab, "tab " + std::to_string(request.tab_id) + " is gone");
  const FrameState* main = tab->main_frame();
  if (main == nullptr) co_return fail(codes::kBrowserTargetClosed, "the tab has no page yet");

  // The frames, main first (copies: the tab may change while the scripts run).
  std::vector<FrameResult> frames;
  frames.push_back(FrameResult{main->frame_id, "", main->session_id, 0, std::nullopt, ""});
  for (const auto& [frame_id, frame] : tab->frames) {
    if (frame_id == main->frame_id) continue;
    frames.push_back(FrameResult{frame_id, frame.parent_frame_id, frame.session_id, 0, std::nullopt, ""});
  }
  const std::string target_id = tab->target_id;
  const int64_t seq = thread->refs().begin_snapshot();
  (void)seq;

  for (size_t f = 0; f < frames.size(); ++f) {
    // Copies, not references into `frames`, across the suspensions (docs/architecture.md, g++ 12).
    const std::string frame_id = frames[f].frame_id;
    const bool is_main = frames[f].parent_frame_id.empty();
    const int64_t ordinal = thread->refs().frame_ordinal(request.tab_id, frame_id, is_main);
    frames[f].ordinal = ordinal;
    json args = {{"nextIndex", thread->refs().next_index(ordinal)}, {"refPrefix", prefix_of(ordinal)}};
    ScriptOptions options;
    options.timeout = timeout;
    options.cancel = cancel;
    Result<json> result =
        co_await call_script(connection, request.tab_id, frame_id, "snapshot", std::move(args), options);
    if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "the snapshot was cancelled");
    if (!result) {
      if (is_main) co_return fail(result.error());
      frames[f].error = result.error().message();
      continue;
    }
    Result<FrameOutline> outline = parse_frame_outline(*result);
    if (!outline) {
      if (is_main) co_return fail(outline.error());
      frames[f].error = outline.error().message();
      continue;
    }
    // The key the refs get: the frame as it is now that its world ran the script.
    const TabState* now = connection->tab(request.tab_id);
    const FrameState* state = now == nullptr ? nullptr : now->frame(frame_id);
    if (state == nullptr) {
      if (is_main) co_return fail(codes::kBrowserTargetClosed, "the page went away during the snapshot");
      frames[f].error = "the frame went away during the snapshot";
      continue;
    }
    RefKey base;
    base.tab_id = request.tab_id;
    base.target_id = target_id;
    base.session_id = state->session_id;
    base.frame_id = frame_id;
    base.loader_id = state->loader_id;
    base.frame_ordinal = ordinal;
    base.world_generation = state->world_generation;
    Result<void> issued = issue_refs(thread->refs(), *outline, base);
    if (!issued) co_return fail(issued.error());
    frames[f].outline = std::move(*outline);
  }

  // Which iframe element holds which child frame: DOM.getFrameOwner of the child against the backendNodeId of
  // every iframe element the parent's outline lists.
  std::map<std::string, int64_t> owners;
  std::map<std::string, std::array<int64_t, 2>> origins;
  // (Indices and copies, not references into `frames`, across the suspensions: see docs/architecture.md.)
  for (size_t c = 0; c < frames.size(); ++c) {
    if (frames[c].parent_frame_id.empty() || !frames[c].outline) continue;
    const std::string child_frame = frames[c].frame_id;
    std::string parent_frame;
    std::string parent_session;
    std::vector<FrameIframe> iframes;
    for (const FrameResult& candidate : frames) {
      if (candidate.frame_id != frames[c].parent_frame_id || !candidate.outline) continue;
      parent_frame = candidate.frame_id;
      parent_session = candidate.session_id;
      iframes = candidate.outline->iframes;
    }
    if (iframes.empty()) continue;
    Result<int64_t> owner = co_await frame_owner(connection, parent_session, child_frame, timeout);
    if (!owner) continue;
    for (size_t i = 0; i < iframes.size(); ++i) {
      const int64_t index = iframes[i].index;
      Result<int64_t> node = co_await element_node(connection, request.tab_id, parent_frame, index, timeout);
      if (!node || *node != *owner) continue;
      owners[child_frame] = index;
      Result<std::array<int64_t, 2>> origin =
          co_await content_origin(connection, parent_session, *owner, timeout);
      if (origin) origins[child_frame] = *origin;
      break;
    }
  }

  std::vector<std::string> notes;
  FrameTree tree = build_tree(frames, 0, owners, origins, notes);
  Outline merged = merge_frames(tree);
  for (std::string& note : notes) merged.notes.push_back(std::move(note));
  Result<Outline> scoped = scope_outline(merged, request.scope);
  if (!scoped) co_return fail(scoped.error());

  RenderOptions render;
  render.max_chars = request.max_chars;
  render.viewport_first = !request.full;
  render.title = tree.outline.title;
  render.url = tree.outline.url;
  render.tab_id = request.tab_id;
  RenderedSnapshot rendered = render_outline(*scoped, render);

  std::vector<std::string> lines = outline_lines(merged);
  std::vector<std::string>& previous = thread->last_outlines()[request.tab_id];
  json boxes = json::array();
  for (const RefBox& box : ref_boxes(tree)) {
    boxes.push_back({{"ref", box.ref}, {"x", box.x}, {"y", box.y}, {"w", box.width}, {"h", box.height}});
  }
  PageSnapshot snapshot;
  snapshot.refs = rendered.total_refs;
  snapshot.details = {
      {"kind", "browser.snapshot"},
      {"tab", request.tab_id},
      {"url", tree.outline.url},
      {"title", tree.outline.title},
      {"outline", outline_text(merged, kDetailsOutlineBytes)},
      {"diff", previous.empty() ? std::string() : diff_outlines(previous, lines, kDiffLines)},
      {"boxes", boxes},
      {"refs", {{"shown", rendered.shown_refs}, {"total", rendered.total_refs}}},
      {"frames", frames.size()},
      {"elapsedMs",
       std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started)
           .count()},
  };
  previous = std::move(lines);
  thread->last_boxes()[request.tab_id] = std::move(boxes);  // browser_screenshot's details
  snapshot.text = std::move(rendered.text);
  co_return snapshot;
}

}  // namespace keel::browser
