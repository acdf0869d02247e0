#include "browser/ref_resolver.h"

#include <utility>

#include "browser/browser_errors.h"
#include "browser/call_script.h"
#include "browser/dom_nodes.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

Error stale(const RefRecord& record, const std::string& why) {
  return Error(codes::kBrowserStaleRef, "Ref " + describe_ref(record) +
                                            " no longer points at the same element: " + why +
                                            ". Take a new snapshot (browser_snapshot) and use its refs.");
}

std::string text_member(const json& object, const char* key) {
  if (!object.is_object()) return {};
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string describe_ref(const RefRecord& record) {
  std::string name = record.name.size() > 60 ? record.name.substr(0, 57) + "..." : record.name;
  return record.ref + " (" + record.role + (name.empty() ? "" : " \"" + name + "\"") + ")";
}

asio::awaitable<Result<ResolvedRef>> resolve_ref(std::shared_ptr<BrowserThread> thread, std::string ref,
                                                 int64_t tab_id, std::optional<std::string> decided_origin,
                                                 std::chrono::milliseconds timeout) {
  Result<RefRecord> found = thread->refs().find(ref, tab_id);
  if (!found) co_return fail(found.error());
  const RefRecord record = *found;
  std::shared_ptr<BrowserConnection> connection = thread->connection();
  if (!connection) co_return fail(codes::kBrowserCrashed, "the browser is not running");
  const TabState* tab = connection->tab(record.key.tab_id);
  if (tab == nullptr || tab->closed || tab->target_id != record.key.target_id) {
    thread->refs().invalidate_tab(record.key.tab_id, "the tab was closed");
    co_return fail(stale(record, "the tab was closed"));
  }
  if (tab->crashed) {
    co_return fail(codes::kBrowserTabCrashed, "tab " + std::to_string(record.key.tab_id) +
                                                  " crashed; the next call reopens it at its last URL");
  }
  const FrameState* frame = tab->frame(record.key.frame_id);
  if (frame == nullptr) {
    thread->refs().invalidate_frame(record.key.tab_id, record.key.frame_id, "its frame is gone");
    co_return fail(stale(record, "its frame is gone"));
  }
  if (frame->loader_id != record.key.loader_id) {
    thread->refs().invalidate_frame(record.key.tab_id, record.key.frame_id, "the page navigated");
    co_return fail(stale(record, "the page navigated"));
  }
  if (frame->world_generation != record.key.world_generation) {
    thread->refs().invalidate_frame(record.key.tab_id, record.key.frame_id,
                                    "the page's document was replaced");
    co_return fail(stale(record, "the page's document was replaced"));
  }
  const std::string origin = frame->origin;
  if (decided_origin && *decided_origin != origin) {
    co_return fail(codes::kBrowserTargetChanged, "the frame of " + describe_ref(record) + " is now at " +
                                                     (origin.empty() ? std::string("no origin") : origin) +
                                                     ", not at " + *decided_origin +
                                                     " as decided for this call; nothing was done");
  }
  ScriptOptions options;
  options.timeout = timeout;
  json args = {{"index", record.key.js_index}};
  Result<json> described = co_await call_script(connection, record.key.tab_id, record.key.frame_id,
                                                "describeRef", std::move(args), options);
  if (!described) co_return fail(described.error());
  if (!described->is_object() || !described->value("found", false)) {
    co_return fail(stale(record, "the element was removed from the page"));
  }
  const std::string role = text_member(*described, "role");
  const std::string name = text_member(*described, "name");
  if (role != record.role || name != record.name) {
    co_return fail(stale(record, "the element is now " + role + (name.empty() ? "" : " \"" + name + "\"")));
  }
  Result<int64_t> node =
      co_await element_node(connection, record.key.tab_id, record.key.frame_id, record.key.js_index, timeout);
  if (!node) co_return fail(node.error());
  if (*node == 0) co_return fail(stale(record, "the element was removed from the page"));
  if (record.backend_node_id != 0 && record.backend_node_id != *node) {
    co_return fail(stale(record, "another element now has its place"));
  }
  if (record.backend_node_id == 0) {
    Result<void> pinned = thread->refs().pin(record.ref, *node);
    if (!pinned) co_return fail(pinned.error());
  }
  ResolvedRef resolved;
  resolved.record = record;
  resolved.record.backend_node_id = *node;
  resolved.origin = origin;
  co_return resolved;
}

}  // namespace keel::browser
