#include "browser/call_script.h"

#include <utility>

#include "browser/browser_errors.h"
#include "browser/page_scripts.h"

namespace keel::browser {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

// Called with `this` = the world's global object; the function name and its argument are JSON values.
constexpr char kInvoke[] =
    "function (fn, args) {\n"
    "  const keel = globalThis.__keel;\n"
    "  if (!keel || typeof keel[fn] !== 'function') throw new Error('keel page scripts: no function ' + "
    "fn);\n"
    "  return keel[fn](args);\n"
    "}";

struct Target {
  std::string session_id;
  int64_t context_id = 0;
};

// The frame's session and keel's world in it (context 0 when it has none yet).
Result<Target> find_frame(const BrowserConnection& connection, int64_t tab_id, const std::string& frame_id) {
  const TabState* tab = connection.tab(tab_id);
  if (tab == nullptr) return fail(codes::kInvalidArgument, "no tab " + std::to_string(tab_id));
  if (tab->crashed) return fail(codes::kBrowserTabCrashed, "tab " + std::to_string(tab_id) + " crashed");
  const FrameState* frame = tab->frame(frame_id);
  if (frame == nullptr) {
    return fail(codes::kBrowserTargetClosed, "frame " + frame_id + " of tab " + std::to_string(tab_id) +
                                                 " is gone (detached or navigated away)");
  }
  return Target{frame->session_id, frame->world_context_id};
}

// A member of an object, or null when `object` is not an object or lacks it (replies are not trusted).
const json& member(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string exception_text(const json& details) {
  const json& description = member(member(details, "exception"), "description");
  if (description.is_string()) return description.get<std::string>();
  const json& text = member(details, "text");
  if (text.is_string()) return text.get<std::string>();
  return details.dump();
}

// Creates (or finds) keel's world in the frame's document and makes sure the bundle ran in it.
asio::awaitable<Result<int64_t>> create_world(std::shared_ptr<BrowserConnection> connection,
                                              std::string session_id, std::string frame_id,
                                              std::chrono::milliseconds timeout) {
  json create = {{"frameId", frame_id}, {"worldName", std::string(kWorldName)}};
  CallOptions create_options;
  create_options.timeout = timeout;
  Result<json> created = co_await connection->call("Page.createIsolatedWorld", std::move(create), session_id,
                                                   std::move(create_options));
  if (!created) co_return fail(created.error());
  const json& id = member(*created, "executionContextId");
  if (!id.is_number_integer())
    co_return fail(codes::kBrowserCdpError, "Page.createIsolatedWorld gave no context");
  const int64_t context_id = id.get<int64_t>();
  json evaluate = {
      {"expression", std::string(page_script_bundle())}, {"contextId", context_id}, {"returnByValue", true}};
  CallOptions evaluate_options;
  evaluate_options.timeout = timeout;
  Result<json> evaluated = co_await connection->call("Runtime.evaluate", std::move(evaluate), session_id,
                                                     std::move(evaluate_options));
  if (!evaluated) co_return fail(evaluated.error());
  if (evaluated->contains("exceptionDetails")) {
    co_return fail(
        codes::kBrowserBadScriptResult,
        "keel's page scripts failed to install: " + exception_text(member(*evaluated, "exceptionDetails")));
  }
  co_return context_id;
}

}  // namespace

asio::awaitable<Result<json>> call_script(std::shared_ptr<BrowserConnection> connection, int64_t tab_id,
                                          std::string frame_id, std::string fn, json args,
                                          ScriptOptions options) {
  // Two attempts: the document may change between reading its world and the call reaching the renderer.
  for (int attempt = 0;; ++attempt) {
    Result<Target> target = find_frame(*connection, tab_id, frame_id);
    if (!target) co_return fail(target.error());
    const std::string session_id = target->session_id;
    int64_t context_id = target->context_id;
    if (context_id == 0) {
      Result<int64_t> created = co_await create_world(connection, session_id, frame_id, options.timeout);
      if (!created) co_return fail(created.error());
      context_id = *created;
    }
    json arguments = json::array({json{{"value", fn}}, json{{"value", args}}});
    json params = {{"functionDeclaration", kInvoke},
                   {"executionContextId", context_id},
                   {"arguments", std::move(arguments)},
                   {"returnByValue", true},
                   {"awaitPromise", true},
                   {"userGesture", options.user_gesture}};
    CallOptions call_options;
    call_options.timeout = options.timeout;
    call_options.cancel = options.cancel;
    Result<json> reply = co_await connection->call("Runtime.callFunctionOn", std::move(params), session_id,
                                                   std::move(call_options));
    if (!reply) {
      const std::string& code = reply.error().code();
      if (code == codes::kBrowserCdpTimeout || code == codes::kCancelled) {
        // Stop whatever the script is still doing; the reply (if any) is of no use.
        connection->client().notify("Runtime.terminateExecution", json::object(), session_id);
        if (code == codes::kBrowserCdpTimeout) {
          co_return fail(codes::kBrowserCdpTimeout, "__keel." + fn + " did not finish within " +
                                                        std::to_string(options.timeout.count()) +
                                                        " ms; it was stopped");
        }
        co_return fail(reply.error());
      }
      const bool context_gone =
          code == codes::kBrowserCdpError && reply.error().message().find("context") != std::string::npos;
      if (context_gone && attempt == 0) continue;
      co_return fail(reply.error());
    }
    if (reply->contains("exceptionDetails")) {
      co_return fail(codes::kBrowserBadScriptResult,
                     "__keel." + fn + " threw: " + exception_text(member(*reply, "exceptionDetails")));
    }
    co_return member(member(*reply, "result"), "value");  // null when the function returned undefined
  }
}

}  // namespace keel::browser
