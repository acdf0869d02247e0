// tools/builtin/timer_tool.cc — the set_timer tool: a durable timer as an interaction.
#include "tools/builtin/timer_tool.h"

#include <cmath>
#include <string>

#include "keel/error_codes.h"

namespace keel::builtin {

namespace {

ToolSpec timer_spec() {
  ToolSpec spec;
  spec.name = "set_timer";
  spec.label = "Set a timer";
  spec.description =
      "Pause this task until a timer fires, then continue. Use it to come back to something later (a build, "
      "a deployment, a reply); the timer survives a restart of keel. For short pauses under a minute use "
      "wait instead.";
  spec.parameters = {
      {"type", "object"},
      {"properties",
       {{"seconds",
         {{"type", "number"},
          {"minimum", 1},
          {"maximum", TimerTool::kMaxSeconds},
          {"description", "How long to wait, in seconds (at most 7 days)."}}},
        {"note", {{"type", "string"}, {"maxLength", 500}, {"description", "Why, shown to the user."}}}}},
      {"required", {"seconds"}},
      {"additionalProperties", false},
  };
  spec.effects = ToolEffects::kRead;
  return spec;
}

}  // namespace

TimerTool::TimerTool() : spec_(timer_spec()) {}

void TimerTool::execute(ToolCallContext, nlohmann::json, std::function<void(Result<ToolResult>)> done) {
  done(fail(codes::kInvalidArgument, "set_timer runs as an interaction: the engine keeps the timer"));
}

std::optional<InteractionPlan> TimerTool::plan_interaction(const nlohmann::json& params) const {
  const double seconds = params.value("seconds", 1.0);
  nlohmann::json request = {{"seconds", params.value("seconds", nlohmann::json(1))}};
  if (params.contains("note")) request["note"] = params["note"];
  return InteractionPlan{.kind = InteractionKind::kTimer,
                         .request = std::move(request),
                         .due_in_ms = static_cast<int64_t>(std::llround(seconds * 1000))};
}

Result<void> TimerTool::check_response(const nlohmann::json&, const nlohmann::json&) const {
  return fail(codes::kInvalidArgument, "a timer fires by itself; it cannot be answered");
}

ToolResult TimerTool::complete_interaction(const nlohmann::json& request,
                                           const nlohmann::json& response) const {
  const auto seconds = request.find("seconds");
  std::string text = "The timer";
  if (seconds != request.end() && seconds->is_number()) text += " of " + seconds->dump() + " s";
  text += " fired";
  if (request.contains("note") && request["note"].is_string()) {
    text += " (" + request["note"].get<std::string>() + ")";
  }
  text += ".";
  return text_result(std::move(text), {{"request", request}, {"firedAtMs", response.value("firedAtMs", 0)}});
}

}  // namespace keel::builtin
