#include "browser/dom_nodes.h"

#include <utility>

#include "browser/browser_errors.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

constexpr char kElementOf[] =
    "function (index) {\n"
    "  const keel = globalThis.__keel;\n"
    "  return keel && typeof keel.element === 'function' ? keel.element(index) : null;\n"
    "}";

// A member of a reply (replies are not trusted: a missing or ill-typed member is null).
const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

CallOptions bounded(std::chrono::milliseconds timeout) {
  CallOptions options;
  options.timeout = timeout;
  return options;
}

}  // namespace

asio::awaitable<Result<int64_t>> element_node(std::shared_ptr<BrowserConnection> connection, int64_t tab_id,
                                              std::string frame_id, int64_t index,
                                              std::chrono::milliseconds timeout) {
  const TabState* tab = connection->tab(tab_id);
  const FrameState* frame = tab == nullptr ? nullptr : tab->frame(frame_id);
  if (frame == nullptr || frame->world_context_id == 0) co_return int64_t{0};
  const std::string session_id = frame->session_id;
  json params = {{"functionDeclaration", kElementOf},
                 {"executionContextId", frame->world_context_id},
                 {"arguments", json::array({json{{"value", index}}})},
                 {"returnByValue", false}};
  Result<json> found =
      co_await connection->call("Runtime.callFunctionOn", std::move(params), session_id, bounded(timeout));
  if (!found) co_return fail(found.error());
  const json& object_id = member(member(*found, "result"), "objectId");
  if (!object_id.is_string()) co_return int64_t{0};  // null: no connected element at that index
  json describe = {{"objectId", object_id}};
  Result<json> described =
      co_await connection->call("DOM.describeNode", std::move(describe), session_id, bounded(timeout));
  connection->client().notify("Runtime.releaseObject", json{{"objectId", object_id}}, session_id);
  if (!described) co_return fail(described.error());
  const json& id = member(member(*described, "node"), "backendNodeId");
  if (!id.is_number_integer())
    co_return fail(codes::kBrowserCdpError, "DOM.describeNode gave no backendNodeId");
  co_return id.get<int64_t>();
}

asio::awaitable<Result<int64_t>> frame_owner(std::shared_ptr<BrowserConnection> connection,
                                             std::string parent_session_id, std::string frame_id,
                                             std::chrono::milliseconds timeout) {
  json params = {{"frameId", frame_id}};
  Result<json> owner =
      co_await connection->call("DOM.getFrameOwner", std::move(params), parent_session_id, bounded(timeout));
  if (!owner) co_return fail(owner.error());
  const json& id = member(*owner, "backendNodeId");
  if (!id.is_number_integer())
    co_return fail(codes::kBrowserCdpError, "DOM.getFrameOwner gave no backendNodeId");
  co_return id.get<int64_t>();
}

asio::awaitable<Result<std::array<int64_t, 2>>> content_origin(std::shared_ptr<BrowserConnection> connection,
                                                               std::string session_id,
                                                               int64_t backend_node_id,
                                                               std::chrono::milliseconds timeout) {
  json params = {{"backendNodeId", backend_node_id}};
  Result<json> box =
      co_await connection->call("DOM.getBoxModel", std::move(params), session_id, bounded(timeout));
  if (!box) co_return fail(box.error());
  const json& quad = member(member(*box, "model"), "content");
  if (!quad.is_array() || quad.size() < 2 || !quad[0].is_number() || !quad[1].is_number()) {
    co_return fail(codes::kBrowserCdpError, "DOM.getBoxModel gave no content quad");
  }
  co_return std::array<int64_t, 2>{static_cast<int64_t>(quad[0].get<double>()),
                                   static_cast<int64_t>(quad[1].get<double>())};
}

}  // namespace keel::browser
