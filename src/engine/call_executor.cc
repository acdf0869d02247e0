#include "engine/call_executor.h"

#include <unordered_set>
#include <variant>

#include "engine/engine_errors.h"
#include "engine/tool_output.h"
#include "engine/wait_records.h"
#include "store/node_body.h"
#include "util/canonical_json.h"
#include "util/utf8.h"

namespace keel {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

// Where an executed call's content came from, when its tool's results are untrusted (descriptor trust):
// the result node records it, and the session context gives the content to the model inside a data
// envelope (store/data_envelope.h). A trusted tool's results (keel's own text, a person's answer) and
// results keel writes itself (refusals, "not run") get none.
std::optional<DataSource> untrusted_source(const ToolDescriptor& tool, const ToolTarget& target) {
  if (tool.trust != ToolTrust::kUntrusted) return std::nullopt;
  DataSource source;
  source.tool = tool.name;
  source.provenance = std::string(to_string(tool.provenance));
  source.path = utf8_sanitized(target.path.value_or(""));
  source.origin = utf8_sanitized(target.origin.value_or(""));
  source.server = utf8_sanitized(target.server_id.value_or(tool.binding.server));
  return source;
}

// What the loop waits for while a tool runs.
struct ToolDone {
  Result<ToolResult> result;
};
struct Interrupted {};
using ToolInput = std::variant<ToolProgress, ToolDone, Interrupted>;

}  // namespace

std::vector<PlannedCall> CallExecutor::plan(const AssembledResponse& response) {
  std::vector<PlannedCall> calls;
  std::unordered_set<std::string> in_response;  // ids this response already uses
  for (const AssembledToolCall& call : response.tool_calls) {
    PlannedCall planned;
    planned.call_node_id = turn_.new_id();
    planned.result_node_id = turn_.new_id();
    // Whatever the provider sent must be storable: bad UTF-8 becomes U+FFFD (the name then matches no tool).
    planned.original_id = utf8_sanitized(call.provider_id);
    planned.name = utf8_sanitized(call.name);
    planned.arguments_text = call.arguments_text;
    // Spec §2: an empty id, or one the thread's history already has, gets a thread-unique replacement
    // before it is persisted.
    planned.tool_call_id = call.provider_id;
    if (planned.tool_call_id.empty() || turn_.actor->context().uses_tool_call_id(planned.tool_call_id) ||
        in_response.contains(planned.tool_call_id)) {
      planned.tool_call_id = "call_" + turn_.new_id();
    }
    in_response.insert(planned.tool_call_id);
    std::string_view text = call.arguments_text;
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) text = "{}";
    const std::string shown =
        utf8_sanitized(call.arguments_text.substr(0, utf8_prefix_length(call.arguments_text, 200)));
    if (call.arguments_text.size() > kMaxToolArgumentsBytes) {
      planned.argument_error = Error(codes::kToolArgumentsTooLarge,
                                     "the arguments take " + std::to_string(call.arguments_text.size()) +
                                         " bytes, more than the " + std::to_string(kMaxToolArgumentsBytes) +
                                         " a call may carry; the call was not run. Split the "
                                         "work into smaller calls. They began: " +
                                         shown);
      planned.arguments_text.resize(utf8_prefix_length(planned.arguments_text, kKeptPrefixBytes));
      calls.push_back(std::move(planned));
      continue;
    }
    auto parsed = parse_json(text);
    if (!parsed) {
      planned.argument_error =
          Error(codes::kToolArgumentsNotJson,
                "the arguments are not valid JSON (" + parsed.error().message() + "): " + shown);
    } else if (!parsed->is_object()) {
      planned.argument_error =
          Error(codes::kToolArgumentsNotJson, "the arguments must be a JSON object, got: " + shown);
    } else {
      planned.arguments = std::move(parsed).value();
    }
    calls.push_back(std::move(planned));
  }
  return calls;
}

CallDecision CallExecutor::decide(const PlannedCall& call, bool approved) const {
  CallDecision d;
  if (turn_.tools_off) {
    d.immediate_error = Error(codes::kToolFailed, "Not run: tools are disabled for the rest of this turn.");
  } else if (call.argument_error) {
    d.immediate_error = call.argument_error;
  } else if ((d.tool = turn_.tools->find(call.name)) == nullptr) {
    std::string names;
    for (const auto& [name, registered] : turn_.tools->tools()) names += (names.empty() ? "" : ", ") + name;
    d.immediate_error =
        Error(codes::kToolUnknown, "There is no tool named '" + call.name +
                                       "'. Available tools: " + (names.empty() ? "none" : names) + ".");
  } else if (auto valid = d.tool->validator->validate(call.arguments); !valid) {
    d.immediate_error = Error(valid.error().code(),
                              "The arguments do not match the tool's schema: " + valid.error().message() +
                                  ". Fix them and call again.");
  } else if (auto resolved = d.tool->implementation->resolve_target_for(
                 ToolScope{turn_.thread_id(), call.tool_call_id}, call.arguments);
             !resolved) {
    d.immediate_error = resolved.error();
  } else if (!canonical_json(target_json(*resolved))) {
    // A file whose name is not UTF-8: it can be neither shown to a person for approval nor recorded, and
    // approving a name shown with replacement characters could let another file pass for it.
    d.immediate_error = Error(codes::kJsonInvalidUtf8,
                              "the call's target (" + shown_json(target_json(*resolved)) +
                                  ") is not valid UTF-8, so keel cannot show or record it; it was not run");
  } else {
    d.target = *resolved;
    GateRequest gate{turn_.thread_id(), call.tool_call_id, d.tool->descriptor.get(),
                     &call.arguments,   d.target,          turn_.run.turn_id};
    d.verdict = turn_.engine.deps().gatekeeper->check(gate);
    if (d.verdict.kind == GateVerdict::Kind::kDeny) {
      d.refusal = d.verdict.reason;
    } else if (d.verdict.kind == GateVerdict::Kind::kAsk && !approved) {
      d.ask = true;
    } else {
      d.interaction = d.tool->implementation->plan_interaction(call.arguments);
    }
  }
  return d;
}

asio::awaitable<CallExecutor::Outcome> CallExecutor::run(PlannedCall call, bool more_after,
                                                         std::optional<CallDecision> decided,
                                                         bool dispatch_recorded) {
  using Next = Outcome::Next;
  // The run's state once this call has its result.
  const RunState after = more_after ? RunState::kExecutingTool : RunState::kStreamingModel;
  if (turn_.cancel.is_cancelled()) {
    co_await ending_.end_turn(Ending::interrupted());
    co_return Outcome{};
  }
  // Whether the call can run, decided before anything is written (for a response's first call, before
  // the assistant message was committed, so its dispatch could commit with it).
  CallDecision decision = decided ? std::move(*decided) : decide(call);
  if (!decision.runs()) {
    // Only the result is written: nothing ran.
    const bool refused = decision.refusal.has_value();
    ToolResult result = refused ? text_result("The call was refused and not run: " + *decision.refusal)
                                : text_result(decision.immediate_error->message(),
                                              {{"code", decision.immediate_error->code()}});
    std::vector<std::string> notices = turn_.count_result(!refused, refused);
    const std::string tool_call_id = call.tool_call_id;
    Result<Events> written = journal_.append_result(
        call,
        [&](Transaction&) -> Result<json> {
          auto body = KEEL_TRY(encode_tool_result(ToolResultBody{.tool_call_id = tool_call_id,
                                                                 .content = result.content,
                                                                 .is_error = true,
                                                                 .details = result.details}));
          if (refused) body["refused"] = true;
          return body;
        },
        notices, after, /*announce_run=*/false);
    if (!turn_.publish_committed(std::move(written))) co_return Outcome{};
    co_return Outcome{.next = Next::kAnswered};
  }
  if (decision.waits()) co_return Outcome{.next = Next::kWaits, .decision = std::move(decision)};
  if (decision.needs_dispatch_record() && !dispatch_recorded) {
    // Running it twice is not safe: that it was dispatched commits before it runs, so recovery knows the
    // outcome may be unknown. A retry-safe call needs no such write; recovery runs it again.
    if (auto dispatched = journal_.record_dispatch(call); !dispatched) {
      turn_.report_unpersisted(dispatched.error());
      co_return Outcome{};
    }
  }
  const bool answered = co_await execute(std::move(call), after, std::move(decision));
  co_return Outcome{.next = answered ? Next::kAnswered : Next::kEnded};
}

asio::awaitable<bool> CallExecutor::execute(PlannedCall call, RunState after, CallDecision decision) {
  const RegisteredTool* tool = decision.tool;
  turn_.publish(events::tool_started(call.result_node_id, turn_.run.turn_id, call.tool_call_id, call.name));
  auto inbox = std::make_shared<AsyncInbox<ToolInput>>(turn_.actor->strand, turn_.engine.io_lifetime());
  CancellationRegistration on_cancel =
      turn_.cancel.on_cancel([to = inbox->sender()] { to.push(Interrupted{}); });
  ToolCallContext context;
  context.tool_call_id = call.tool_call_id;
  context.thread_id = turn_.thread_id();
  context.cancel = turn_.cancel;
  context.target = decision.target;
  turn_.engine.crash_point("tool.execute.before");
  turn_.in_flight_call = call.tool_call_id;
  // On the engine's tool workers, never on this I/O thread, within the call's time budget (its timeout
  // arrives as a tool.timed_out outcome); nothing the tool reports after this frame ends reaches the loop.
  const std::unique_ptr<ToolCallHandle> running = turn_.engine.dispatch_tool(
      *tool, std::move(context), call.arguments,
      ToolCallSinks{
          .progress = [to = inbox->sender()](ToolProgress progress) { to.push(std::move(progress)); },
          .done =
              [to = inbox->sender()](Result<ToolResult> result) { to.push(ToolDone{std::move(result)}); }});
  std::optional<Result<ToolResult>> outcome;
  while (!outcome) {
    turn_.flush_before_waiting(inbox->has_queued());
    ToolInput input = co_await inbox->next();
    if (std::holds_alternative<Interrupted>(input)) {
      co_await ending_.end_turn(Ending::interrupted("", call.tool_call_id));
      co_return false;
    }
    if (auto* progress = std::get_if<ToolProgress>(&input)) {
      turn_.publish(events::tool_progress(call.result_node_id, progress->text, progress->details));
    } else if (auto* done = std::get_if<ToolDone>(&input)) {
      outcome = std::move(done->result);
    }
  }
  const bool failed = !*outcome;
  ToolResult result = failed ? text_result(outcome->error().message(), {{"code", outcome->error().code()}})
                             : std::move(**outcome);
  BoundedToolOutput bounded =
      bound_tool_output(std::move(result), turn_.engine.options().max_tool_output_chars);
  // The side effect happened and its result is not durable yet: the window recovery classifies by the
  // tool's recovery class.
  turn_.engine.crash_point("tool.result.before_commit");
  std::vector<std::string> notices = turn_.count_result(failed, false);
  // Error text counts too: a failing tool may quote what it read (a file name, a server's message).
  const std::optional<DataSource> source = untrusted_source(*tool->descriptor, decision.target);
  const std::string tool_call_id = call.tool_call_id;
  Result<Events> settled = journal_.append_result(
      call,
      [&](Transaction&) -> Result<json> {
        return encode_tool_result(ToolResultBody{.tool_call_id = tool_call_id,
                                                 .content = bounded.content,
                                                 .is_error = failed,
                                                 .details = bounded.details,
                                                 .untrusted = source});
      },
      notices, after, /*announce_run=*/false);
  co_return turn_.publish_committed(std::move(settled));
}

}  // namespace keel
