// The L2 tools: pixels (browser_screenshot) and trusted input (browser_mouse, browser_keyboard,
// browser_drag), all through the tab's input session (input_session.h), so that an interrupt can release what
// they hold and detach them. Input actions run through ActionObserver like the L1 actions (settle, then
// report). Every input lands where the call was decided for: the frame under a point, the frame that holds
// the keyboard focus and a drag's destination are checked against the decided origin before anything is sent.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "browser/action_observer.h"
#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/dom_nodes.h"
#include "browser/input.h"
#include "browser/input_session.h"
#include "browser/ref_resolver.h"
#include "browser/tools/tool_runs.h"
#include "browser/tools/tool_support.h"
#include "tools/builtin/tool_support.h"

namespace keel::browser::runs {
using builtin::valid_utf8;
namespace {

namespace asio = boost::asio;
using nlohmann::json;

constexpr double kFullPageMaxHeight = 8'000;
// A capture larger than this (base64) is re-taken as JPEG: the engine keeps at most 1 MiB of details.
constexpr size_t kMaxPngBase64 = 700 * 1024;
constexpr int kJpegQuality = 70;
constexpr int kDragSteps = 8;
// Frames nested across processes (an OOPIF in an OOPIF ...) that a point's offset is followed through.
constexpr int kMaxFrameDepth = 8;

struct Point {
  double x = 0;
  double y = 0;
};

struct Box {
  double x = 0;
  double y = 0;
  double w = 0;
  double h = 0;
  Point center() const { return {x + w / 2, y + h / 2}; }
};

std::string px(double value) { return std::to_string(std::lround(value)); }

double number_arg(const json& params, const char* key, double fallback) {
  auto it = params.find(key);
  return it != params.end() && it->is_number() ? it->get<double>() : fallback;
}

// Where frame `frame_id`'s local viewport starts in the main frame's viewport: the content origins of the
// <iframe> elements at every process boundary (an OOPIF's quads are in its own viewport; a same-process
// frame's are already in the main frame's).
asio::awaitable<Result<Point>> frame_offset(std::shared_ptr<BrowserConnection> connection, int64_t tab_id,
                                            std::string frame_id, std::chrono::milliseconds timeout) {
  Point offset;
  std::string frame = std::move(frame_id);
  for (int depth = 0; depth < kMaxFrameDepth; ++depth) {
    const TabState* tab = connection->tab(tab_id);
    if (tab == nullptr) co_return fail(codes::kBrowserNoSuchTab, "the tab was closed");
    const FrameState* local_root = tab->frame(frame);
    if (local_root == nullptr || local_root->session_id == tab->session_id) break;
    const FrameState* parent = tab->frame(local_root->parent_frame_id);
    while (parent != nullptr && parent->session_id == local_root->session_id) {
      local_root = parent;
      parent = tab->frame(local_root->parent_frame_id);
    }
    if (parent == nullptr) break;
    const std::string parent_session = parent->session_id;
    const std::string root_id = local_root->frame_id;
    frame = parent->frame_id;
    Result<int64_t> owner = co_await frame_owner(connection, parent_session, root_id, timeout);
    if (!owner) co_return fail(owner.error());
    Result<std::array<int64_t, 2>> origin =
        co_await content_origin(connection, parent_session, *owner, timeout);
    if (!origin) co_return fail(origin.error());
    offset.x += static_cast<double>((*origin)[0]);
    offset.y += static_cast<double>((*origin)[1]);
  }
  co_return offset;
}

// The bounding box of a DOM.getContentQuads reply's first quad; nullopt when it has none.
std::optional<Box> first_quad_box(const json& reply) {
  const json list = reply.value("quads", json::array());
  if (list.empty() || !list[0].is_array() || list[0].size() != 8) return std::nullopt;
  double min_x = 1e18, min_y = 1e18, max_x = -1e18, max_y = -1e18;
  for (size_t i = 0; i < 8; i += 2) {
    if (!list[0][i].is_number() || !list[0][i + 1].is_number()) return std::nullopt;
    min_x = std::min(min_x, list[0][i].get<double>());
    max_x = std::max(max_x, list[0][i].get<double>());
    min_y = std::min(min_y, list[0][i + 1].get<double>());
    max_y = std::max(max_y, list[0][i + 1].get<double>());
  }
  return Box{min_x, min_y, max_x - min_x, max_y - min_y};
}

// The box of a ref's element in the main viewport (CSS px), scrolled into view first.
asio::awaitable<Result<Box>> ref_box(std::shared_ptr<BrowserThread> thread, ResolvedRef ref,
                                     std::chrono::milliseconds timeout) {
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  CallOptions options;
  options.timeout = timeout;
  json node = {{"backendNodeId", ref.record.backend_node_id}};
  Result<json> scrolled =
      co_await connection->call("DOM.scrollIntoViewIfNeeded", node, ref.record.key.session_id, options);
  (void)scrolled;  // an element that cannot scroll may still be in view: the quads tell
  Result<json> quads =
      co_await connection->call("DOM.getContentQuads", node, ref.record.key.session_id, options);
  if (!quads) co_return fail(quads.error());
  const std::optional<Box> local = first_quad_box(*quads);
  if (!local) {
    co_return fail(codes::kBrowserNotActionable,
                   "cannot act on " + describe_ref(ref.record) + ": it has no visible box on the page");
  }
  Result<Point> offset =
      co_await frame_offset(connection, ref.record.key.tab_id, ref.record.key.frame_id, timeout);
  if (!offset) co_return fail(offset.error());
  co_return Box{local->x + offset->x, local->y + offset->y, local->w, local->h};
}

// What is under a point of the tab's viewport, and in which frame.
struct Hit {
  std::string frame_id;
  std::string origin;
  std::string what;  // "button#buy in frame http://localhost:8732"
};

std::string describe_node(const json& node) {
  std::string name = node.value("localName", std::string());
  if (name.empty()) name = node.value("nodeName", std::string("node"));
  const json attributes = node.value("attributes", json::array());
  for (size_t i = 0; i + 1 < attributes.size(); i += 2) {
    if (attributes[i] == "id" && attributes[i + 1].is_string()) {
      name += "#" + valid_utf8(attributes[i + 1].get<std::string>()).substr(0, 60);
    }
  }
  return name;
}

// The child frame of `parent_frame` (in another session) whose <iframe> is `owner`; "" when none.
asio::awaitable<std::string> owned_frame(std::shared_ptr<BrowserConnection> connection, int64_t tab_id,
                                         std::string parent_frame, std::string parent_session, int64_t owner,
                                         std::chrono::milliseconds timeout) {
  std::vector<std::string> children;
  if (const TabState* tab = connection->tab(tab_id)) {
    for (const auto& [id, frame] : tab->frames) {
      if (frame.parent_frame_id == parent_frame && frame.session_id != parent_session) children.push_back(id);
    }
  }
  for (size_t i = 0; i < children.size(); ++i) {
    const std::string child = children[i];  // a copy: the loop suspends (docs/architecture.md, g++ 12)
    Result<int64_t> node = co_await frame_owner(connection, parent_session, child, timeout);
    if (node && *node == owner) co_return child;
  }
  co_return std::string();
}

// Hit test (DOM.getNodeForLocation on the tab's session): a point over a same-process frame names a node
// of that frame; a point over a cross-process frame (OOPIF) names its <iframe>, whose content frame is then
// where the input lands.
asio::awaitable<Result<Hit>> hit_test(std::shared_ptr<BrowserThread> thread, int64_t tab_id, Point point,
                                      std::chrono::milliseconds timeout) {
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  const TabState* tab = connection->tab(tab_id);
  if (tab == nullptr) co_return fail(codes::kBrowserNoSuchTab, "the tab was closed");
  const std::string session_id = tab->session_id;
  CallOptions options;
  options.timeout = timeout;
  json at = {{"x", std::lround(point.x)},
             {"y", std::lround(point.y)},
             {"includeUserAgentShadowDOM", false},
             {"ignorePointerEventsNone", true}};
  Result<json> found =
      co_await connection->call("DOM.getNodeForLocation", std::move(at), session_id, options);
  if (!found) {
    co_return fail(codes::kBrowserNotActionable, "nothing of the page is at (" + px(point.x) + ", " +
                                                     px(point.y) + "): " + found.error().message());
  }
  Hit hit;
  hit.frame_id = found->value("frameId", std::string());
  const int64_t backend_node_id = found->value("backendNodeId", int64_t{0});
  json described = {{"backendNodeId", backend_node_id}};
  Result<json> node =
      co_await connection->call("DOM.describeNode", std::move(described), session_id, options);
  if (node && node->contains("node") && (*node)["node"].is_object()) {
    const json n = (*node)["node"];
    hit.what = describe_node(n);
    std::string content_frame = n.value("frameId", std::string());
    const std::string local_name = n.value("localName", std::string());
    if (content_frame.empty() && (local_name == "iframe" || local_name == "frame")) {
      // No content frame named: the cross-process child of the hit frame that this element owns.
      content_frame =
          co_await owned_frame(connection, tab_id, hit.frame_id, session_id, backend_node_id, timeout);
    }
    tab = connection->tab(tab_id);
    const FrameState* inner = tab == nullptr ? nullptr : tab->frame(content_frame);
    if (inner != nullptr && inner->session_id != session_id) {
      hit.frame_id = content_frame;
      hit.what = "the content of " + hit.what;
    }
  } else {
    hit.what = "an element";
  }
  tab = connection->tab(tab_id);
  const FrameState* frame = tab == nullptr ? nullptr : tab->frame(hit.frame_id);
  hit.origin = frame == nullptr ? std::string() : frame->origin;
  if (frame != nullptr && !frame->parent_frame_id.empty()) {
    hit.what += " in a frame" + (hit.origin.empty() ? std::string(" not loaded yet") : " of " + hit.origin);
  }
  co_return hit;
}

// The hit test, refused when the point's frame is not at the origin the call was decided for.
asio::awaitable<Result<Hit>> checked_hit(std::shared_ptr<BrowserThread> thread, int64_t tab_id, Point point,
                                         ToolTarget decided) {
  Result<Hit> hit = co_await hit_test(thread, tab_id, point, thread->runtime().options().command_timeout);
  if (!hit) co_return hit;
  if (decided.origin && hit->origin != *decided.origin) {
    co_return fail(codes::kBrowserTargetChanged,
                   "the point (" + px(point.x) + ", " + px(point.y) + ") is over " + hit->what + " at " +
                       (hit->origin.empty() ? std::string("no origin") : hit->origin) + ", not at " +
                       *decided.origin + " as decided for this call; nothing was done");
  }
  co_return hit;
}

// document.activeElement when it is a frame's element (the focus is inside that frame), else null.
constexpr char kFocusedFrameElement[] =
    "function () {\n"
    "  const active = document.activeElement;\n"
    "  return active && (active.localName === 'iframe' || active.localName === 'frame') ? active : null;\n"
    "}";

// The frame whose document holds the keyboard focus, where keys go: from the main frame down through every
// focused <iframe>. document.activeElement is read in keel's world of each frame, which the page cannot
// tamper with; an out-of-process frame is followed through its own session like any other.
asio::awaitable<Result<std::string>> focused_frame(std::shared_ptr<BrowserConnection> connection,
                                                   int64_t tab_id, std::chrono::milliseconds timeout) {
  const TabState* tab = connection->tab(tab_id);
  const FrameState* main = tab == nullptr ? nullptr : tab->main_frame();
  if (main == nullptr) co_return fail(codes::kBrowserNoSuchTab, "the tab has no page");
  std::string frame = main->frame_id;
  CallOptions options;
  options.timeout = timeout;
  for (int depth = 0; depth < kMaxFrameDepth; ++depth) {
    // Makes sure the frame's document has keel's world (a lookup of no element: no effect on the page).
    ScriptOptions script;
    script.timeout = timeout;
    Result<json> world = co_await call_script(connection, tab_id, frame, "element", json(-1), script);
    if (!world) co_return fail(world.error());
    tab = connection->tab(tab_id);
    const FrameState* state = tab == nullptr ? nullptr : tab->frame(frame);
    if (state == nullptr) {
      co_return fail(codes::kBrowserTargetClosed,
                     "the frame that holds the focus went away; nothing was done");
    }
    if (state->world_context_id == 0) {
      co_return fail(
          codes::kBrowserNotActionable,
          "the document that holds the focus is not ready for keel yet; nothing was done, try again");
    }
    const std::string session_id = state->session_id;
    json call = {{"functionDeclaration", kFocusedFrameElement},
                 {"executionContextId", state->world_context_id},
                 {"returnByValue", false}};
    Result<json> active =
        co_await connection->call("Runtime.callFunctionOn", std::move(call), session_id, options);
    if (!active) co_return fail(active.error());
    const json result = active->value("result", json::object());
    if (!result.contains("objectId") || !result["objectId"].is_string()) co_return frame;
    const std::string object_id = result["objectId"].get<std::string>();
    json describe = {{"objectId", object_id}};
    Result<json> node =
        co_await connection->call("DOM.describeNode", std::move(describe), session_id, options);
    connection->client().notify("Runtime.releaseObject", json{{"objectId", object_id}}, session_id);
    if (!node) co_return fail(node.error());
    const json described = node->value("node", json::object());
    std::string child = described.value("frameId", std::string());
    if (child.empty()) {
      const int64_t owner = described.value("backendNodeId", int64_t{0});
      child = co_await owned_frame(connection, tab_id, frame, session_id, owner, timeout);
    }
    tab = connection->tab(tab_id);
    if (child.empty() || tab == nullptr || tab->frame(child) == nullptr) {
      co_return fail(codes::kBrowserTargetChanged,
                     "the focus is in a frame whose document is not loaded yet; nothing was done");
    }
    frame = child;
  }
  co_return frame;
}

// The focused frame, refused when it is not at the origin the call was decided for: keys typed into a
// cross-origin frame were never approved for that site.
asio::awaitable<Result<std::string>> checked_focus(std::shared_ptr<BrowserThread> thread, int64_t tab_id,
                                                   ToolTarget decided) {
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  Result<std::string> frame =
      co_await focused_frame(connection, tab_id, thread->runtime().options().command_timeout);
  if (!frame) co_return frame;
  const TabState* tab = connection->tab(tab_id);
  const FrameState* state = tab == nullptr ? nullptr : tab->frame(*frame);
  const std::string origin = state == nullptr ? std::string() : state->origin;
  if (decided.origin && origin != *decided.origin) {
    co_return fail(codes::kBrowserTargetChanged,
                   "the keyboard focus is in a frame at " +
                       (origin.empty() ? std::string("no origin") : origin) + ", not at " + *decided.origin +
                       " as decided for this call; nothing was typed. To type there, give the ref of the "
                       "element to type into (ref), so that the call is decided for its site");
  }
  co_return frame;
}

// Sends input events in order through the tab's input session. Stops early (null) when the page blocks (a
// dialog opened by a handler: the report says so).
asio::awaitable<Result<json>> dispatch_all(std::shared_ptr<BrowserThread> thread, int64_t tab_id,
                                           std::vector<json> commands, CancellationToken cancel,
                                           CancellationToken blocked) {
  CallOrBlocked stop(cancel, blocked);
  for (size_t i = 0; i < commands.size(); ++i) {
    CallOptions options;
    options.timeout = thread->runtime().options().command_timeout;
    options.cancel = stop.source.token();
    const std::string method = commands[i].value("method", std::string());
    json params = commands[i].value("params", json::object());
    Result<json> sent = co_await send_input(thread, tab_id, method, std::move(params), options);
    if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "the input was interrupted");
    if (!sent) {
      if (blocked.is_cancelled()) co_return json();
      co_return fail(sent.error());
    }
  }
  co_return json::object();
}

json mouse_event(const char* type, Point at, const std::string& button, int clicks) {
  json params = {{"type", type}, {"x", at.x}, {"y", at.y}, {"button", button}, {"clickCount", clicks}};
  if (button != "none") params["buttons"] = button == "left" ? 1 : button == "right" ? 2 : 4;
  return {{"method", "Input.dispatchMouseEvent"}, {"params", std::move(params)}};
}

// The point a call names: a ref's centre (`<prefix>ref`) or its coordinates (`<prefix>x`, `<prefix>y`).
asio::awaitable<Result<Point>> point_of(std::shared_ptr<BrowserThread> thread, json params,
                                        std::string prefix, int64_t tab_id, ToolTarget decided) {
  const std::chrono::milliseconds timeout = thread->runtime().options().command_timeout;
  const std::string ref_name = string_arg(params, (prefix + "ref").c_str());
  if (!ref_name.empty()) {
    Result<ResolvedRef> ref = co_await resolve_ref(thread, ref_name, tab_id, decided.origin, timeout);
    if (!ref) co_return fail(ref.error());
    Result<Box> box = co_await ref_box(thread, *ref, timeout);
    if (!box) co_return fail(box.error());
    co_return box->center();
  }
  const std::string x = prefix + "x";
  const std::string y = prefix + "y";
  if (!params.contains(x) || !params.contains(y)) {
    co_return fail(codes::kInvalidArgument, "give " + prefix + "ref, or both " + x + " and " + y);
  }
  co_return Point{number_arg(params, x.c_str(), 0), number_arg(params, y.c_str(), 0)};
}

std::string main_frame_id(BrowserThread& thread, int64_t tab_id) {
  const TabState* tab = thread.connection()->tab(tab_id);
  const FrameState* main = tab == nullptr ? nullptr : tab->main_frame();
  return main == nullptr ? std::string() : main->frame_id;
}

// Registry indices -> [x, y, w, h] of each element's getBoundingClientRect in its frame's viewport, rounded
// to CSS px (null: no connected element at that index any more). One JSON string: thousands of small arrays
// cost far more to return by value.
constexpr char kRegistryRects[] =
    "function (indices) {\n"
    "  const keel = globalThis.__keel;\n"
    "  return JSON.stringify(indices.map((index) => {\n"
    "    const el = keel && typeof keel.element === 'function' ? keel.element(index) : null;\n"
    "    if (!el) return null;\n"
    "    const r = el.getBoundingClientRect();\n"
    "    return [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)];\n"
    "  }));\n"
    "}";
constexpr size_t kMaxUnboxed = 100;

// Where a frame's own viewport starts in the main viewport: the content box of its <iframe> in the parent
// (in the parent's local-root viewport) plus where that local root is.
asio::awaitable<Result<Point>> viewport_offset(std::shared_ptr<BrowserConnection> connection, int64_t tab_id,
                                               std::string frame_id, std::chrono::milliseconds timeout) {
  const TabState* tab = connection->tab(tab_id);
  const FrameState* frame = tab == nullptr ? nullptr : tab->frame(frame_id);
  if (frame == nullptr) co_return fail(codes::kBrowserTargetClosed, "the frame is gone");
  if (frame->parent_frame_id.empty()) co_return Point{};
  const FrameState* parent = tab->frame(frame->parent_frame_id);
  if (parent == nullptr) co_return fail(codes::kBrowserTargetClosed, "the frame's parent is gone");
  const std::string parent_id = parent->frame_id;
  const std::string parent_session = parent->session_id;
  Result<int64_t> owner = co_await frame_owner(connection, parent_session, frame_id, timeout);
  if (!owner) co_return fail(owner.error());
  Result<std::array<int64_t, 2>> content =
      co_await content_origin(connection, parent_session, *owner, timeout);
  if (!content) co_return fail(content.error());
  Result<Point> above = co_await frame_offset(connection, tab_id, parent_id, timeout);
  if (!above) co_return fail(above.error());
  co_return Point{static_cast<double>((*content)[0]) + above->x,
                  static_cast<double>((*content)[1]) + above->y};
}

struct FreshBoxes {
  json boxes = json::array();    // {ref, x, y, w, h}: in the viewport now
  json unboxed = json::array();  // {ref, why}: usable refs whose box could not be computed
  size_t dropped = 0;            // refs of the last snapshot that are gone (stale, removed from the page)
};

// The boxes of the last snapshot's refs as they are now (after scrolling, re-rendering): one script call per
// frame in keel's world (getBoundingClientRect of the registry's elements), offset into the main viewport;
// those inside a viewport of `width` x `height` are kept.
asio::awaitable<FreshBoxes> fresh_boxes(std::shared_ptr<BrowserThread> thread, int64_t tab_id, double width,
                                        double height, std::chrono::milliseconds timeout) {
  FreshBoxes out;
  std::map<std::string, std::vector<RefRecord>> by_frame;
  if (auto last = thread->last_boxes().find(tab_id); last != thread->last_boxes().end()) {
    for (const json& box : last->second) {
      Result<RefRecord> record = thread->refs().find(box.value("ref", std::string()), tab_id);
      if (!record) {
        ++out.dropped;
        continue;
      }
      by_frame[record->key.frame_id].push_back(*record);
    }
  }
  auto unboxed = [&out](const std::string& ref, std::string why) {
    if (out.unboxed.size() < kMaxUnboxed) out.unboxed.push_back({{"ref", ref}, {"why", std::move(why)}});
  };
  std::vector<std::string> frame_ids;
  for (const auto& [frame_id, records] : by_frame) frame_ids.push_back(frame_id);
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  for (size_t f = 0; f < frame_ids.size(); ++f) {
    // Copies, not references into the map, across the suspensions (docs/architecture.md, g++ 12).
    const std::string frame_id = frame_ids[f];
    const TabState* tab = connection->tab(tab_id);
    const FrameState* frame = tab == nullptr ? nullptr : tab->frame(frame_id);
    std::vector<RefRecord> live;
    json indices = json::array();
    for (const RefRecord& record : by_frame[frame_id]) {
      if (frame == nullptr || frame->loader_id != record.key.loader_id ||
          frame->world_generation != record.key.world_generation || frame->world_context_id == 0) {
        ++out.dropped;  // another document or world: the ref is stale
        continue;
      }
      live.push_back(record);
      indices.push_back(record.key.js_index);
    }
    if (live.empty()) continue;
    const std::string session_id = frame->session_id;
    const int64_t context_id = frame->world_context_id;
    Result<Point> offset = co_await viewport_offset(connection, tab_id, frame_id, timeout);
    if (!offset) {
      for (const RefRecord& record : live) {
        unboxed(record.ref, "where its frame is on the page is unknown: " + offset.error().message());
      }
      continue;
    }
    json call = {{"functionDeclaration", kRegistryRects},
                 {"executionContextId", context_id},
                 {"arguments", json::array({json{{"value", std::move(indices)}}})},
                 {"returnByValue", true}};
    CallOptions options;
    options.timeout = timeout;
    Result<json> reply =
        co_await connection->call("Runtime.callFunctionOn", std::move(call), session_id, options);
    const json text = reply ? reply->value("result", json::object()).value("value", json()) : json();
    const json rects = text.is_string() ? json::parse(text.get<std::string>(), nullptr, false) : json();
    if (!rects.is_array() || rects.size() != live.size()) {
      const std::string why = reply ? "its frame's script gave no boxes" : reply.error().message();
      for (const RefRecord& record : live) unboxed(record.ref, "its box could not be read: " + why);
      continue;
    }
    for (size_t i = 0; i < live.size(); ++i) {
      const json& rect = rects[i];
      if (rect.is_null()) {
        ++out.dropped;  // removed from the page since the snapshot
        continue;
      }
      if (!rect.is_array() || rect.size() != 4 || !rect[0].is_number() || !rect[1].is_number() ||
          !rect[2].is_number() || !rect[3].is_number()) {
        unboxed(live[i].ref, "its frame's script gave a malformed box");
        continue;
      }
      const double w = rect[2].get<double>(), h = rect[3].get<double>();
      if (w <= 0 && h <= 0) {
        unboxed(live[i].ref, "it is not rendered now (hidden or detached from the layout)");
        continue;
      }
      const double x = rect[0].get<double>() + offset->x, y = rect[1].get<double>() + offset->y;
      if (x + w <= 0 || y + h <= 0 || x >= width || y >= height) continue;
      out.boxes.push_back({{"ref", live[i].ref},
                           {"x", std::lround(x)},
                           {"y", std::lround(y)},
                           {"w", std::lround(w)},
                           {"h", std::lround(h)}});
    }
  }
  co_return out;
}

}  // namespace

asio::awaitable<Result<ToolResult>> screenshot(std::shared_ptr<BrowserThread> thread, json params,
                                               ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const RuntimeOptions& runtime = thread->runtime().options();
  CallOptions options;
  options.timeout = runtime.command_timeout;
  options.cancel = cancel;
  // A background tab's capture never answers (plan §6): bring it to front first, always.
  Result<json> front = co_await send_input(thread, *tab, "Page.bringToFront", json::object(), options);
  if (!front) co_return fail(front.error());
  std::optional<Box> clip_box;
  std::string clipped;
  if (std::string ref_name = string_arg(params, "ref"); !ref_name.empty()) {
    Result<ResolvedRef> ref =
        co_await resolve_ref(thread, ref_name, *tab, decided.origin, runtime.command_timeout);
    if (!ref) co_return fail(ref.error());
    Result<Box> box = co_await ref_box(thread, *ref, runtime.command_timeout);
    if (!box) co_return fail(box.error());
    clip_box = *box;
    clipped = "; only " + describe_ref(ref->record);
  }
  Result<json> metrics = co_await send_input(thread, *tab, "Page.getLayoutMetrics", json::object(), options);
  if (!metrics) co_return fail(metrics.error());
  const json viewport = metrics->value("cssLayoutViewport", json::object());
  const json content = metrics->value("cssContentSize", json::object());
  const double width = number_arg(viewport, "clientWidth", 0),
               height = number_arg(viewport, "clientHeight", 0);
  json capture = {{"format", "png"}};
  std::string extent = "the viewport (" + px(width) + "x" + px(height) + " px)";
  if (clip_box) {
    // Clips are in document coordinates; the box is in the viewport's.
    capture["clip"] = {{"x", clip_box->x + number_arg(viewport, "pageX", 0)},
                       {"y", clip_box->y + number_arg(viewport, "pageY", 0)},
                       {"width", std::max(1.0, clip_box->w)},
                       {"height", std::max(1.0, clip_box->h)},
                       {"scale", 1}};
    extent =
        px(clip_box->w) + "x" + px(clip_box->h) + " px at (" + px(clip_box->x) + ", " + px(clip_box->y) + ")";
  } else if (bool_arg(params, "full_page", false)) {
    const double page_width = std::max(1.0, number_arg(content, "width", width));
    const double page_height = std::max(1.0, number_arg(content, "height", height));
    const double shot_height = std::min(page_height, kFullPageMaxHeight);
    capture["clip"] = {{"x", 0}, {"y", 0}, {"width", page_width}, {"height", shot_height}, {"scale", 1}};
    capture["captureBeyondViewport"] = true;
    extent = "the whole page (" + px(page_width) + "x" + px(shot_height) + " px" +
             (page_height > shot_height
                  ? ", cut at " + px(kFullPageMaxHeight) + " of " + px(page_height) + " px high"
                  : std::string()) +
             ")";
  }
  CallOptions shot_options;
  shot_options.timeout = runtime.screenshot_timeout;
  shot_options.cancel = cancel;
  Result<json> shot = co_await send_input(thread, *tab, "Page.captureScreenshot", capture, shot_options);
  if (!shot) co_return fail(shot.error());
  std::string data = shot->value("data", std::string());
  std::string format = "png";
  std::string note;
  if (data.size() > kMaxPngBase64) {
    const size_t png_kb = data.size() * 3 / 4 / 1024;
    capture["format"] = "jpeg";
    capture["quality"] = kJpegQuality;
    Result<json> jpeg = co_await send_input(thread, *tab, "Page.captureScreenshot", capture, shot_options);
    if (!jpeg) co_return fail(jpeg.error());
    data = jpeg->value("data", std::string());
    format = "jpeg";
    note = " The PNG was " + std::to_string(png_kb) + " KB, so this is a JPEG (quality " +
           std::to_string(kJpegQuality) + ").";
  }
  if (data.empty()) co_return fail(codes::kBrowserCdpError, "Page.captureScreenshot gave no image");
  FreshBoxes fresh = co_await fresh_boxes(thread, *tab, width, height, runtime.command_timeout);
  const TabState* state = thread->connection()->tab(*tab);
  const FrameState* main = state == nullptr ? nullptr : state->main_frame();
  const size_t kb = data.size() * 3 / 4 / 1024;
  std::string text = "Screenshot of tab " + std::to_string(*tab) + " (" +
                     valid_utf8(main == nullptr ? std::string() : main->url) + "): " + extent + clipped +
                     ", " + format + ", " + std::to_string(kb) + " KB." + note;
  if (!fresh.boxes.empty()) {
    text += " " + std::to_string(fresh.boxes.size()) +
            " refs of the last snapshot are in view (their boxes, as of this screenshot, in details).";
  }
  json details = {{"kind", "browser.screenshot"},
                  {"tab", *tab},
                  {"format", format},
                  {"viewport", {{"width", width}, {"height", height}}},
                  {"boxes", std::move(fresh.boxes)}};
  if (!fresh.unboxed.empty()) details["unboxed"] = std::move(fresh.unboxed);
  if (fresh.dropped > 0) details["dropped_refs"] = fresh.dropped;
  if (data.size() <= kMaxPngBase64) details[format] = data;
  ToolResult result = text_result(std::move(text), std::move(details));
  ContentBlock image;
  image.kind = ContentBlock::Kind::kImage;
  image.media_type = "image/" + format;
  image.data_base64 = std::move(data);
  result.content.push_back(std::move(image));
  co_return result;
}

asio::awaitable<Result<ToolResult>> mouse(std::shared_ptr<BrowserThread> thread, json params,
                                          ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  const std::string action = string_arg(params, "action");
  const std::string button = string_arg(params, "button").empty() ? "left" : string_arg(params, "button");
  Result<Point> point = co_await point_of(thread, params, "", *tab, decided);
  if (!point) co_return fail(point.error());
  const Point at = *point;
  Result<Hit> hit = co_await checked_hit(thread, *tab, at, decided);
  if (!hit) co_return fail(hit.error());
  std::vector<json> events;
  events.push_back(mouse_event("mouseMoved", at, "none", 0));
  const int clicks = action == "double_click" ? 2 : action == "click" ? 1 : 0;
  for (int click = 1; click <= clicks; ++click) {
    events.push_back(mouse_event("mousePressed", at, button, click));
    events.push_back(mouse_event("mouseReleased", at, button, click));
  }
  std::string past = action == "move"           ? "Moved the pointer to"
                     : action == "double_click" ? "Double-clicked"
                                                : "Clicked";
  if (action == "wheel") {
    json wheel = mouse_event("mouseWheel", at, "none", 0);
    wheel["params"]["deltaX"] = number_arg(params, "delta_x", 0);
    wheel["params"]["deltaY"] = number_arg(params, "delta_y", 0);
    events.push_back(std::move(wheel));
    past = "Scrolled the wheel by (" + px(number_arg(params, "delta_x", 0)) + ", " +
           px(number_arg(params, "delta_y", 0)) + ") at";
  }
  if (clicks > 0 && button != "left") past += " (" + button + " button)";
  ActionObserver observer(thread, *tab);
  // Built in its own statement: no conditional temporaries as coroutine arguments (g++ 12).
  const std::string watched = hit->frame_id.empty() ? main_frame_id(*thread, *tab) : hit->frame_id;
  co_await observer.watch_frame(watched);
  Result<json> sent = co_await dispatch_all(thread, *tab, std::move(events), cancel, observer.blocked());
  if (!sent) co_return fail(sent.error());
  co_await observer.settle(cancel);
  if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "interrupted after the mouse " + action);
  ActionReport report =
      co_await observer.report(past + " (" + px(at.x) + ", " + px(at.y) + "), over " + hit->what + ".");
  co_return text_result(std::move(report.text), std::move(report.details));
}

asio::awaitable<Result<ToolResult>> keyboard(std::shared_ptr<BrowserThread> thread, json params,
                                             ToolTarget decided, CancellationToken cancel) {
  const bool has_keys = params.contains("keys");
  const bool has_text = params.contains("text");
  if (has_keys == has_text) co_return fail(codes::kInvalidArgument, "give either keys or text");
  std::vector<json> events;
  std::string done;
  if (has_keys) {
    std::vector<std::string> chords;
    if (params["keys"].is_string()) chords.push_back(params["keys"].get<std::string>());
    if (params["keys"].is_array()) {
      for (const json& chord : params["keys"]) {
        if (chord.is_string()) chords.push_back(chord.get<std::string>());
      }
    }
    if (chords.empty()) co_return fail(codes::kInvalidArgument, "keys names no key");
    // Every chord is parsed before anything is pressed: an unknown key fails the call with nothing done.
    for (const std::string& name : chords) {
      Result<KeyChord> chord = parse_key_chord(name);
      if (!chord) co_return fail(chord.error());
      for (json& event : key_press_events(*chord)) {
        events.push_back({{"method", "Input.dispatchKeyEvent"}, {"params", std::move(event)}});
      }
      done += (done.empty() ? "" : ", ") + name;
    }
    done = "Pressed " + done;
  } else {
    const std::string text = string_arg(params, "text");
    events.push_back({{"method", "Input.insertText"}, {"params", {{"text", text}}}});
    done = "Typed " + std::to_string(text.size()) + " bytes of text";
  }
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  std::string where = "the focused element";
  if (std::string ref_name = string_arg(params, "ref"); !ref_name.empty()) {
    const std::chrono::milliseconds timeout = thread->runtime().options().command_timeout;
    Result<ResolvedRef> ref = co_await resolve_ref(thread, ref_name, *tab, decided.origin, timeout);
    if (!ref) co_return fail(ref.error());
    CallOptions options;
    options.timeout = timeout;
    options.cancel = cancel;
    json node = {{"backendNodeId", ref->record.backend_node_id}};
    Result<json> focused = co_await thread->connection()->call("DOM.focus", std::move(node),
                                                               ref->record.key.session_id, options);
    if (!focused) {
      co_return fail(codes::kBrowserNotActionable,
                     "cannot focus " + describe_ref(ref->record) + ": " + focused.error().message());
    }
    where = describe_ref(ref->record);
  }
  Result<std::string> focus = co_await checked_focus(thread, *tab, decided);
  if (!focus) co_return fail(focus.error());
  ActionObserver observer(thread, *tab);
  const std::string watched = *focus;
  co_await observer.watch_frame(watched);
  Result<json> sent = co_await dispatch_all(thread, *tab, std::move(events), cancel, observer.blocked());
  if (!sent) co_return fail(sent.error());
  co_await observer.settle(cancel);
  if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "interrupted after the keys");
  ActionReport report = co_await observer.report(done + " on " + where + ".");
  co_return text_result(std::move(report.text), std::move(report.details));
}

asio::awaitable<Result<ToolResult>> drag(std::shared_ptr<BrowserThread> thread, json params,
                                         ToolTarget decided, CancellationToken cancel) {
  Result<int64_t> tab = live_tab(*thread, params, decided, TabChecks{});
  if (!tab) co_return fail(tab.error());
  Result<Point> from = co_await point_of(thread, params, "from_", *tab, decided);
  if (!from) co_return fail(from.error());
  Result<Point> to = co_await point_of(thread, params, "to_", *tab, decided);
  if (!to) co_return fail(to.error());
  Result<Hit> hit = co_await checked_hit(thread, *tab, *from, decided);
  if (!hit) co_return fail(hit.error());
  // What is dropped lands at the destination: it must be of the decided origin too.
  Result<Hit> target = co_await checked_hit(thread, *tab, *to, decided);
  if (!target) co_return fail(target.error());
  Result<std::string> session = co_await input_session(thread, *tab);
  if (!session) co_return fail(session.error());
  // HTML5 drag and drop (draggable=true): with drags intercepted, the page's dragstart ends in
  // Input.dragIntercepted (with the drag's data) instead of a drag of the system, and the drop is sent with
  // Input.dispatchDragEvent. A drag the page does not start (a slider, a canvas) stays a plain mouse drag.
  auto intercepted = std::make_shared<std::optional<json>>();
  const std::string input_session_id = *session;
  CdpClient::Subscription drags =
      thread->connection()->client().listen([intercepted, input_session_id](const CdpEvent& event) {
        if (event.method != "Input.dragIntercepted" || event.session_id != input_session_id) return;
        if (!*intercepted) *intercepted = event.params.value("data", json::object());
      });
  CallOptions options;
  options.timeout = thread->runtime().options().command_timeout;
  options.cancel = cancel;
  json intercept = {{"enabled", true}};
  Result<json> intercepting =
      co_await send_input(thread, *tab, "Input.setInterceptDrags", intercept, options);
  if (!intercepting) co_return fail(intercepting.error());
  ActionObserver observer(thread, *tab);
  // Built in its own statement: no conditional temporaries as coroutine arguments (g++ 12).
  const std::string watched = hit->frame_id.empty() ? main_frame_id(*thread, *tab) : hit->frame_id;
  co_await observer.watch_frame(watched);
  std::vector<json> press;
  press.push_back(mouse_event("mouseMoved", *from, "none", 0));
  press.push_back(mouse_event("mousePressed", *from, "left", 1));
  Result<json> pressed = co_await dispatch_all(thread, *tab, std::move(press), cancel, observer.blocked());
  if (!pressed) co_return fail(pressed.error());
  // The moves one by one: the page's dragstart comes with the first moves (its interception is reported
  // before that move's reply), and from then on the drag goes on as drag events.
  int step = 1;
  bool blocked = pressed->is_null();
  for (; step <= kDragSteps && !blocked && !*intercepted; ++step) {
    const double f = static_cast<double>(step) / kDragSteps;
    std::vector<json> move;
    move.push_back(mouse_event(
        "mouseMoved", Point{from->x + (to->x - from->x) * f, from->y + (to->y - from->y) * f}, "left", 0));
    Result<json> moved = co_await dispatch_all(thread, *tab, std::move(move), cancel, observer.blocked());
    if (!moved) co_return fail(moved.error());
    blocked = moved->is_null();
  }
  const bool html5 = intercepted->has_value();
  std::vector<json> rest;
  if (html5) {
    const json data = **intercepted;
    auto drag_event = [&data](const char* type, Point at) {
      return json{{"method", "Input.dispatchDragEvent"},
                  {"params", {{"type", type}, {"x", at.x}, {"y", at.y}, {"data", data}}}};
    };
    const double f0 = static_cast<double>(step - 1) / kDragSteps;
    rest.push_back(
        drag_event("dragEnter", Point{from->x + (to->x - from->x) * f0, from->y + (to->y - from->y) * f0}));
    for (; step <= kDragSteps; ++step) {
      const double f = static_cast<double>(step) / kDragSteps;
      rest.push_back(
          drag_event("dragOver", Point{from->x + (to->x - from->x) * f, from->y + (to->y - from->y) * f}));
    }
    rest.push_back(drag_event("drop", *to));
  }
  rest.push_back(mouse_event("mouseReleased", *to, "left", 1));
  json no_intercept = {{"method", "Input.setInterceptDrags"}, {"params", {{"enabled", false}}}};
  rest.push_back(std::move(no_intercept));
  if (!blocked) {
    Result<json> sent = co_await dispatch_all(thread, *tab, std::move(rest), cancel, observer.blocked());
    if (!sent) co_return fail(sent.error());
  }
  co_await observer.settle(cancel);
  if (cancel.is_cancelled()) co_return fail(codes::kCancelled, "interrupted after the drag");
  const std::string how =
      html5 ? " (an HTML5 drag and drop: the page started a drag and got the drop over " + target->what + ")"
            : " (mouse events; the page started no HTML5 drag)";
  ActionReport report =
      co_await observer.report("Dragged " + hit->what + " from (" + px(from->x) + ", " + px(from->y) +
                               ") to (" + px(to->x) + ", " + px(to->y) + ")" + how + ".");
  co_return text_result(std::move(report.text), std::move(report.details));
}

}  // namespace keel::browser::runs
