// mcp/tool_bridge.cc — see tool_bridge.h.
#include "mcp/tool_bridge.h"

#include <atomic>
#include <exception>
#include <utility>

#include "keel/error_codes.h"
#include "mcp/mcp_errors.h"
#include "tools/tool_errors.h"

namespace keel::mcp {

using nlohmann::json;

namespace {

json content_json(const ContentBlock& block) {
  switch (block.kind) {
    case ContentBlock::Kind::kText:
      return json{{"type", "text"}, {"text", block.text}};
    case ContentBlock::Kind::kImage:
      return json{{"type", "image"}, {"data", block.data_base64}, {"mimeType", block.media_type}};
    case ContentBlock::Kind::kReasoning:
      break;
  }
  return nullptr;
}

CallOutcome error_outcome(const std::string& code, const std::string& text) {
  json result = {{"content", json::array({json{{"type", "text"}, {"text", text}}})},
                 {"isError", true},
                 {"_meta", json{{"keel/code", code}}}};
  return CallOutcome{.result = std::move(result), .code = code};
}

json annotations_of(const ToolDescriptor& descriptor) {
  const bool reads = descriptor.effects == ToolEffects::kRead;
  // Builtin tools stay on this machine (the workspace, a timer); page and MCP tools reach the open web.
  const bool open_world = descriptor.level != ToolLevel::kBuiltin;
  return json{{"title", descriptor.label},
              {"readOnlyHint", reads},
              {"destructiveHint", !reads},
              {"idempotentHint", descriptor.recovery == ToolRecovery::kRetrySafe},
              {"openWorldHint", open_world}};
}

}  // namespace

CallOutcome outcome_of(const ToolResult& result) {
  json content = json::array();
  for (const ContentBlock& block : result.content) {
    json entry = content_json(block);
    if (!entry.is_null()) content.push_back(std::move(entry));
  }
  return CallOutcome{.result = json{{"content", std::move(content)}, {"isError", false}},
                     .code = std::nullopt};
}

CallOutcome outcome_of(const Error& error) { return error_outcome(error.code(), error.message()); }

ToolBridge::ToolBridge(std::shared_ptr<const ToolRegistryGeneration> tools, Gatekeeper& gatekeeper,
                       ToolBridgeOptions options)
    : tools_(std::move(tools)), gatekeeper_(gatekeeper), options_(std::move(options)) {}

json ToolBridge::list_tools() const {
  json list = json::array();
  for (const auto& [name, registered] : tools_->tools()) {
    const ToolDescriptor& descriptor = *registered.descriptor;
    list.push_back(json{{"name", descriptor.name},
                        {"title", descriptor.label},
                        {"description", descriptor.description},
                        {"inputSchema", descriptor.parameters},
                        {"annotations", annotations_of(descriptor)}});
  }
  return list;
}

bool ToolBridge::has_tool(const std::string& name) const { return tools_->find(name) != nullptr; }

void ToolBridge::call(const std::string& name, json arguments, std::string call_id, CancellationToken cancel,
                      std::function<void(ToolProgress)> progress,
                      std::function<void(CallOutcome)> done) const {
  const RegisteredTool* tool = tools_->find(name);
  if (tool == nullptr) {
    done(error_outcome(codes::kToolNotFound, "There is no tool named '" + name + "'."));
    return;
  }
  if (auto valid = tool->validator->validate(arguments); !valid) {
    done(error_outcome(valid.error().code(), "The arguments do not match the tool's schema: " +
                                                 valid.error().message() + ". Fix them and call again."));
    return;
  }
  // As the engine asks for it: the MCP session is one pseudo-thread (its tabs and refs, for browser tools).
  auto target = tool->implementation->resolve_target_for(ToolScope{options_.thread_id, call_id}, arguments);
  if (!target) {
    done(outcome_of(target.error()));
    return;
  }
  const GateRequest request{.thread_id = options_.thread_id,
                            .tool_call_id = call_id,
                            .descriptor = tool->descriptor.get(),
                            .arguments = &arguments,
                            .target = *target};
  const GateVerdict verdict = gatekeeper_.check(request);
  const bool refused = verdict.kind == GateVerdict::Kind::kDeny ||
                       (verdict.kind == GateVerdict::Kind::kAsk && !options_.allow_writes);
  if (refused) {
    std::string reason = verdict.reason;
    if (verdict.kind == GateVerdict::Kind::kAsk) {
      reason += " (nobody can approve it here: keel mcp-server runs such calls only with --allow-writes)";
    }
    done(error_outcome(codes::kMcpCallRefused, "The call was refused and not run: " + reason));
    return;
  }
  if (tool->implementation->plan_interaction(arguments)) {
    done(error_outcome(codes::kMcpCallRefused,
                       "The call was refused and not run: " + name +
                           " waits for a person or a timer, which keel's MCP server cannot hold"));
    return;
  }
  if (cancel.is_cancelled()) {
    done(outcome_of(Error(codes::kCancelled, "The call was cancelled before it ran.")));
    return;
  }

  ToolCallContext context;
  context.tool_call_id = std::move(call_id);
  context.thread_id = options_.thread_id;
  context.cancel = std::move(cancel);
  context.progress = progress ? std::move(progress) : [](ToolProgress) {};
  // A tool must call `done` once; a second call (a bug in the tool) is dropped rather than answered twice.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto finish = [answered, done](Result<ToolResult> result) {
    if (answered->exchange(true)) return;
    done(result ? outcome_of(*result) : outcome_of(result.error()));
  };
  try {
    tool->implementation->execute(std::move(context), std::move(arguments), finish);
  } catch (const std::exception& e) {
    // keel/tool.h: an exception escaping execute is the tool's error, not the server's.
    finish(fail(codes::kInternal, std::string("The tool failed: ") + e.what()));
  } catch (...) {
    finish(fail(codes::kInternal, "The tool failed with an unknown exception."));
  }
}

}  // namespace keel::mcp
