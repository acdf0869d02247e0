// The turn loop (spec §1, §2): one coroutine per running turn, on its thread's strand.
//
//   loop {
//     [steer cutoff — spec §3; the steering work adds it here, before the context is built]
//     build the session context once; stream the model (item.delta);
//     transaction(assistant_message + usage + step cursor [+ completion when there is nothing to run]);
//     item.complete, token.usage; no tool calls -> turn.complete;
//     per call: stable node ids; unknown tool / bad arguments / refusal -> a result at once;
//               otherwise transaction(tool_call + run state) -> execute -> transaction(tool_result + run
//               state)
//   }
// Every event that reports a persisted fact is published after its transaction committed; turn.complete is
// published last. Interrupt (the turn's cancellation) wakes the loop wherever it waits; it then writes a
// partial reply, a result for a call in flight, a notice for the model, and the interrupted state.
#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <unordered_set>
#include <utility>
#include <variant>

#include "engine/engine_errors.h"
#include "engine/engine_impl.h"
#include "engine/response_assembler.h"
#include "engine/run_environment.h"
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

constexpr int kFailuresBeforeReminder = 3;
constexpr int kFailuresBeforeToolsOff = 5;
// Events a runner may hold back while its input keeps coming (see flush_before_waiting).
constexpr size_t kMaxEventsHeldBack = 64;
// What one reply and one call's arguments may take, so that their nodes fit the store's 4 MiB node limit
// with room for the rest of the body. A larger reply ends the turn with provider.reply_too_large; larger
// arguments get the result tool.arguments_too_large and the call does not run.
constexpr size_t kMaxReplyBytes = 3 * 1024 * 1024;
constexpr size_t kMaxToolArgumentsBytes = 2 * 1024 * 1024;
// How much of a refused reply or of unusable arguments is kept for the record.
constexpr size_t kKeptPrefixBytes = 64 * 1024;

const char kReminderText[] =
    "The last 3 tool calls failed. Step back: re-read what the tools returned and change your approach "
    "instead of repeating the same call.";
const char kToolsOffText[] =
    "5 tool calls in a row failed, so tools are now disabled for this turn. Give your final reply to the "
    "user with what you know, and say what did not work.";
// The error a turn ends with when the failure breaker turned tools off and the final reply still asked for
// a tool (docs/protocol.md lists it; defined here, not in engine_errors.h, only while the code registry is
// being consolidated).
// In a durable wait's pending tool: the breaker's notices held for the end of the response.
constexpr char kHeldNoticesKey[] = "heldNotices";
const char kInterruptNotice[] =
    "The user interrupted the previous turn. Tools that were running may have partly run; check the current "
    "state before repeating an action.";

// What the loop waits for while the model streams or a tool runs.
struct StreamDone {
  Result<void> result;
};
struct ToolDone {
  Result<ToolResult> result;
};
struct Interrupted {};
using LoopInput = std::variant<ProviderEvent, StreamDone, ToolProgress, ToolDone, Interrupted>;
using Inbox = AsyncInbox<LoopInput>;

class InboxSink final : public ProviderSink {
 public:
  explicit InboxSink(Inbox::Sender inbox) : inbox_(std::move(inbox)) {}
  void on_event(ProviderEvent event) override { inbox_.push(std::move(event)); }
  void on_done(Result<void> result) override { inbox_.push(StreamDone{std::move(result)}); }

 private:
  Inbox::Sender inbox_;  // the provider may end after the turn (and the engine) did
};

json usage_json(const TokenUsage& u) {
  return {{"inputTokens", u.input_tokens},
          {"outputTokens", u.output_tokens},
          {"cachedInputTokens", u.cached_input_tokens},
          {"reasoningTokens", u.reasoning_tokens},
          {"totalTokens", u.total()}};
}

TokenUsage usage_from_json(const json& j) {
  TokenUsage u;
  if (!j.is_object()) return u;
  u.input_tokens = j.value("inputTokens", int64_t{0});
  u.output_tokens = j.value("outputTokens", int64_t{0});
  u.cached_input_tokens = j.value("cachedInputTokens", int64_t{0});
  u.reasoning_tokens = j.value("reasoningTokens", int64_t{0});
  return u;
}

TokenUsage add(TokenUsage a, const TokenUsage& b) {
  a.input_tokens += b.input_tokens;
  a.output_tokens += b.output_tokens;
  a.cached_input_tokens += b.cached_input_tokens;
  a.reasoning_tokens += b.reasoning_tokens;
  return a;
}

AssistantStopReason assistant_reason(StopReason reason) {
  switch (reason) {
    case StopReason::kToolUse:
      return AssistantStopReason::kToolUse;
    case StopReason::kEnd:
      return AssistantStopReason::kEnd;
    case StopReason::kMaxTokens:
      return AssistantStopReason::kMaxTokens;
    case StopReason::kContentFilter:
      return AssistantStopReason::kContentFilter;
    case StopReason::kError:
      break;
  }
  return AssistantStopReason::kError;
}

size_t reply_bytes(const AssembledResponse& response) {
  size_t bytes = 0;
  for (const ContentBlock& block : response.content) bytes += block.text.size() + block.data_base64.size();
  return bytes;
}

// Makes a reply storable (issue 14): text that is not valid UTF-8 gets U+FFFD, provider extras lose what
// canonical JSON cannot encode. A reply larger than kMaxReplyBytes is refused: the result is the body to keep
// for the record (its beginning, marked), nullopt when the reply may be written as it is.
std::optional<AssistantMessageBody> bound_reply(AssembledResponse& response) {
  for (ContentBlock& block : response.content) {
    block.text = utf8_sanitized(std::move(block.text));
    if (!block.provider_data.is_null()) block.provider_data = storable_json(std::move(block.provider_data));
  }
  response.provider_stop_reason = utf8_sanitized(std::move(response.provider_stop_reason));
  if (reply_bytes(response) <= kMaxReplyBytes) return std::nullopt;
  AssistantMessageBody kept{
      .content = {}, .stop_reason = AssistantStopReason::kError, .provider_stop_reason = "reply_too_large"};
  size_t budget = kKeptPrefixBytes;
  for (const ContentBlock& block : response.content) {
    if (block.kind != ContentBlock::Kind::kText || budget == 0) continue;
    ContentBlock part;
    part.text = block.text.substr(0, utf8_prefix_length(block.text, budget));
    budget -= part.text.size();
    kept.content.push_back(std::move(part));
  }
  ContentBlock marker;
  marker.text = "\n[keel: the reply was too large to keep; only its beginning is shown]";
  kept.content.push_back(std::move(marker));
  return kept;
}

// JSON as text for a message: bytes that are not UTF-8 (a file name from the disk) are shown as U+FFFD
// instead of throwing.
std::string shown_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json node_json(const NodeRecord& node) {
  return {{"id", node.id}, {"kind", to_string(node.kind)}, {"body", node.body}};
}

NewNode make_node(std::string id, const std::string& thread_id, const std::string& run_id, NodeKind kind,
                  json body) {
  NewNode node;
  node.id = std::move(id);
  node.thread_id = thread_id;
  node.run_id = run_id;
  node.kind = kind;
  node.body = std::move(body);
  return node;
}

// One tool call of a response, after its id was made thread-unique.
struct PlannedCall {
  std::string call_node_id;    // the stable tool_call node, written with the assistant message
  std::string result_node_id;  // reserved for its tool_result
  std::string tool_call_id;
  std::string original_id;
  std::string name;
  std::string arguments_text;
  json arguments = json::object();
  std::optional<Error> argument_error;  // not JSON / not an object
};

class TurnRunner : public std::enable_shared_from_this<TurnRunner> {
 public:
  // `continuing`: the run waited durably (an approval or an interaction) and its wait was settled or
  // withdrawn; the runner first finishes the calls of its last response, then goes on with the loop.
  // `generation`: the tool registry generation the caller already took (recovery, a held wait), which the
  // runner verifies the run's environment against and binds its tools from; null = the current one.
  TurnRunner(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, RunRecord run,
             CancellationToken cancel, bool continuing,
             std::shared_ptr<const ToolRegistryGeneration> generation)
      : engine_(engine),
        actor_(std::move(actor)),
        run_(std::move(run)),
        cancel_(std::move(cancel)),
        continuing_(continuing),
        generation_(std::move(generation)) {}

  // Runs the turn to its end. Whatever fails inside — a write the store refuses, an exception — the turn
  // ends: failed with the reason when that can be written, otherwise visibly unpersisted with its thread
  // taking no new work (end_after_failure).
  asio::awaitable<void> run();
  // The run's state as this runner last wrote it.
  RunState state() const { return run_.state; }
  // Publishes what the outbox holds; run() does so before every suspension, the completion handler at the end.
  void flush_events() {
    if (!outbox_.empty()) engine_.publish_all(thread_id(), std::exchange(outbox_, {}));
  }
  // Before the coroutine waits on `inbox`: the events go out, unless input is already on its way (a tool
  // that finished at once, a provider that sent a burst), in which case the coroutine does not really
  // block and the events go out with the next batch — one subscriber wake-up instead of several, with no
  // added delay. A bounded outbox still goes out, so a long burst cannot hold events back.
  void flush_before_waiting(const Inbox& inbox) {
    if (!inbox.has_queued() || outbox_.size() >= kMaxEventsHeldBack) flush_events();
  }

 private:
  const std::string& thread_id() const { return actor_->thread_id; }
  Clock const& clock() const { return *engine_.deps().clock; }
  std::string new_id() { return engine_.deps().ids->next_id(); }
  // Events wait in the outbox until the coroutine next suspends or the turn ends, then go out together: the
  // events of one step's commits cost a subscriber one wake-up, not one each. Nothing else runs on the
  // strand while the coroutine runs, so no other event of this thread can come between.
  void publish(std::string type, json payload) { outbox_.push_back({std::move(type), std::move(payload)}); }
  void publish_run() {
    publish("run.updated",
            {{"runId", run_.id}, {"state", to_string(run_.state)}, {"revision", run_.revision}});
  }
  void complete_turn(const std::string& stop_reason, json extra = json::object()) {
    json payload = {{"turnId", run_.turn_id}, {"runId", run_.id}, {"stopReason", stop_reason}};
    for (auto& [key, value] : extra.items()) payload[key] = value;
    publish("turn.complete", std::move(payload));
  }

  std::shared_ptr<const ToolRegistryGeneration> bind_tools();
  Result<ProviderRequest> build_request();
  std::vector<PlannedCall> plan_calls(const AssembledResponse& response);

  // Each returns false when the turn has ended (its terminal state written and published).
  asio::awaitable<bool> step();
  // What the engine decided about a call before running it: a result to give at once (unknown tool, bad
  // arguments), a refusal, or the tool to run.
  struct CallDecision {
    std::optional<Error> immediate_error;
    std::optional<std::string> refusal;
    const RegisteredTool* tool = nullptr;
    ToolTarget target;
    GateVerdict verdict;
    bool ask = false;                            // a person must approve it first
    std::optional<InteractionPlan> interaction;  // it waits for an answer or a timer instead of executing
    bool runs() const { return !immediate_error && !refusal; }
    bool executes() const { return runs() && !ask && !interaction; }
    // Running it twice is not safe: that it was dispatched must be durable before it runs.
    bool needs_dispatch_record() const {
      return executes() && tool->descriptor->recovery != ToolRecovery::kRetrySafe;
    }
  };
  // `approved`: a person accepted the call, so a verdict that asks lets it run.
  CallDecision decide(const PlannedCall& call, bool approved = false) const;
  static json dispatch_record(const PlannedCall& call);

  // `more_after`: another call of the same response follows this one. `decided`: the decision taken
  // before the assistant message committed (the response's first call); `dispatch_recorded`: its
  // dispatch committed with that message.
  asio::awaitable<bool> run_call(PlannedCall call, bool more_after, std::optional<CallDecision> decided,
                                 bool dispatch_recorded);

  // ---- durable waits (spec §5, §6.1) ----
  // The call waits for an approval or an interaction: one transaction writes the record and the run's
  // waiting state with its pending tool, the request goes out, and the runner ends; the actor holds the
  // wait until it is settled or withdrawn. Steers are still admitted; the continuation's first request
  // takes them.
  asio::awaitable<void> suspend(PlannedCall call, CallDecision decision);
  // The continuation: the calls of the run's last response that have no result, read from the store; the
  // waiting one is settled from its record (declined, re-verified and dispatched, or its claimed answer),
  // then the others run. Returns false when the turn ended or waits again.
  asio::awaitable<bool> continue_wait();
  Result<std::vector<PlannedCall>> calls_without_results(Transaction& tx);
  // A settled approval's call: refused when declined, when its tool or target changed since it was
  // approved, or when the gatekeeper now refuses it; otherwise run.
  asio::awaitable<bool> run_approved(PlannedCall call, bool more_after, ApprovalRecord approval);
  // An answered interaction's call: claims the answer and writes the trusted result in one transaction.
  asio::awaitable<bool> finish_interaction(PlannedCall call, bool more_after, InteractionRecord interaction);
  json approval_request(const PlannedCall& call, const CallDecision& decision) const;

  // The tool_call node's body, with what the provider sent when it was replaced or unusable.
  static Result<json> tool_call_body(const PlannedCall& call, const std::string& assistant_node_id);
  using ResultWritten = std::pair<std::vector<NodeRecord>, RunRecord>;
  // In the caller's transaction: the call's tool_result node (body as given), and the run moved to `after`
  // with its streak and without its pending tool. The failure breaker's `notices` are held until the
  // response's last result (`after` is not executing_tool) and written after it: a user message between
  // the results of one response's calls is a history OpenAI Chat and Anthropic refuse. (Holding happens
  // here, in the transaction; when it fails the turn ends, so nothing held matters any more.)
  Result<ResultWritten> append_result(Transaction& tx, const PlannedCall& call, json body,
                                      const std::vector<std::string>& notices, RunState after);
  // After a call's result committed: the runner's copy of the run, the call answered, the context
  // following, the nodes published.
  void took_result(const std::string& tool_call_id, ResultWritten written) {
    run_ = std::move(written.second);
    answered(tool_call_id);
    follow(written.first);
    publish_nodes(written.first);
  }
  void answered(const std::string& tool_call_id) {
    if (in_flight_call_ == tool_call_id) in_flight_call_.reset();
    std::erase_if(unanswered_, [&](const PlannedCall& call) { return call.tool_call_id == tool_call_id; });
  }
  // Results for every call whose tool_call committed without one, so every provider accepts the history.
  // `in_flight`: the call that was running (it may have partly run); the others never started.
  Result<void> answer_unanswered(Transaction& tx, std::vector<NodeRecord>& out, const std::string& why,
                                 const std::optional<std::string>& in_flight);

  // Whether the run's pending set holds a steer (a read: a turn's first cutoff checks the stored set once,
  // and most often finds it empty).
  bool has_pending_steers() {
    auto tx = engine_.store().begin(TxMode::kRead);
    if (!tx) return true;  // let the write report the store's trouble
    auto pending = engine_.runs().pending_steers(**tx, run_.id);
    (void)(*tx)->commit();
    return !pending || !pending->empty();
  }
  // Appends the run's admitted, not yet materialized steers onto the leaf as steered user messages, in
  // admission order (the cutoff: everything admitted before this transaction), and marks them taken.
  Result<void> materialize_steers(Transaction& tx, std::vector<NodeRecord>& out);
  // The turn's end is committed: a steer from now on is refused with turn.ended.
  uint64_t stop_admitting() { return actor_->gate().stop(); }

  // Waits until the admissions holding tickets up to `ticket` have answered (later ones do not delay it).
  // Costs nothing when they all have.
  asio::awaitable<void> wait_admissions(uint64_t ticket);

  // Each stops admitting, waits for the admissions already initiated, then writes the terminal state with
  // every ACKed steer materialized (spec §3, early end).
  asio::awaitable<void> finish_failed(Error error, std::optional<NewNode> assistant = std::nullopt);
  // Spec §1, the context window (engine/context_window.h): summarizes the oldest messages and commits a
  // compaction node the next request starts from. False when the turn ended instead (failed: no room could
  // be made or the summary failed; interrupted).
  asio::awaitable<bool> compact(int64_t tokens_before);
  asio::awaitable<void> finish_interrupted(std::string partial_text,
                                           std::optional<std::string> in_flight_call_id);
  // A write of the turn failed: the runner stops admitting and unwinds (each caller returns "ended"); run()
  // then ends the turn with this error (the first one).
  void report_unpersisted(const Error& error);
  // The single ending path after a failed write or an exception (issue 14): the turn ends failed with
  // `cause` (open calls answered, ACKed steers kept); when even that cannot be written, nothing of the end
  // is persisted, so the run keeps its last persisted state for recovery after a restart, the thread is
  // stranded (it refuses new work: turn.unpersisted) so nothing is built on top of it, and clients get
  // turn.complete{stopReason: "error", persisted: false}.
  asio::awaitable<void> end_after_failure(Error cause);
  asio::awaitable<void> run_turn();
  // After the terminal transaction of an early end: its nodes, the run's state, then turn.complete (or,
  // when the store refused it, run.updated{persisted: false}).
  void end_turn(Result<std::pair<std::vector<NodeRecord>, RunRecord>> written, const std::string& stop_reason,
                json extra = json::object());
  void publish_nodes(const std::vector<NodeRecord>& nodes) {
    for (const NodeRecord& node : nodes) {
      publish("item.complete", {{"itemId", node.id},
                                {"kind", to_string(node.kind)},
                                {"turnId", run_.turn_id},
                                {"node", node_json(node)}});
    }
  }
  // Feeds nodes this runner just committed to the actor's context.
  void follow(const NodeRecord& node) {
    if (context_current_ && !actor_->context().extend(node)) context_current_ = false;
  }
  void follow(const std::vector<NodeRecord>& nodes) {
    for (const NodeRecord& node : nodes) follow(node);
  }
  // The failure breaker: updates the streak for one result and returns the notices it raised.
  std::vector<std::string> count_result(bool failed, bool refused);
  // The breaker's notices raised by results of the current response, written after its last result;
  // kept in a durable wait's pending tool (kHeldNoticesKey) so the continuation writes them.
  std::vector<std::string> held_notices_;

  EngineCore::Impl& engine_;
  std::shared_ptr<ThreadActor> actor_;
  RunRecord run_;
  CancellationToken cancel_;
  std::shared_ptr<const ToolRegistryGeneration> tools_;
  bool tools_off_ = false;
  std::vector<PlannedCall> unanswered_;  // calls of the current response whose result is not written yet
  std::vector<EventBus::Draft> outbox_;
  // While a turn runs only its runner appends to the thread (ops that move the leaf are refused), so the
  // actor's context follows the runner's own commits without reading them back; a node that does not
  // continue the cached path clears this and the next request builds from the store.
  bool context_current_ = false;
  const bool continuing_ = false;
  // The one registry generation the run's environment is verified against and its tools are bound from.
  std::shared_ptr<const ToolRegistryGeneration> generation_;
  // The first write of the turn the store refused; run() ends the turn with it.
  std::optional<Error> failed_write_;
  // The call whose tool is running or whose result is not written yet (a failed write answers it as
  // "may have partly run").
  std::optional<std::string> in_flight_call_;
  // What the run executes with: its environment snapshot's model settings and tools (the engine's current
  // options for a run that has none).
  ModelSettings model_;
  std::optional<std::vector<std::string>> snapshot_tools_;
  // Loads the run's environment; a continuing run's is verified against the current transport and tools
  // first (spec §5). Errors end the run as failed, with the reason.
  Result<void> load_environment();
};

std::shared_ptr<const ToolRegistryGeneration> TurnRunner::bind_tools() {
  const ModelSettings& model = model_;
  if (!model.tool_use) return ToolRegistry::empty_generation();  // no schema is sent at all
  std::shared_ptr<const ToolRegistryGeneration> generation = generation_;
  if (snapshot_tools_) {
    // The run's catalog, from the current generation (recovery verified that the two agree).
    std::unordered_set<std::string> names(snapshot_tools_->begin(), snapshot_tools_->end());
    return generation->filtered([&](const ToolDescriptor& d) { return names.contains(d.name); });
  }
  if (!model.vision) {
    generation = generation->filtered([](const ToolDescriptor& d) { return d.name != "screenshot"; });
  }
  return generation;
}

Result<ProviderRequest> TurnRunner::build_request() {
  const ModelSettings& model = model_;
  ProviderRequest request;
  if (context_current_) {
    request.messages = actor_->context().messages();
  } else {
    auto tx = KEEL_TRY(engine_.store().begin(TxMode::kRead));
    ThreadRecord thread = KEEL_TRY(engine_.threads().get(*tx, thread_id()));
    if (thread.leaf_node_id) request.messages = KEEL_TRY(actor_->context().build(*tx, *thread.leaf_node_id));
    KEEL_TRY(tx->commit());
    context_current_ = thread.leaf_node_id.has_value();
  }
  if (!model.vision && actor_->context().image_blocks() > 0) {
    return fail(codes::kImageUnsupported,
                "the conversation holds an image but the model '" + model.model + "' does not accept images");
  }
  request.model = model.model;
  // A fixed suffix explaining the data envelopes, in every request of a run that binds tools (the way
  // untrusted content enters; the set is fixed for the run, so the prompt's cached prefix stays stable even
  // when the failure breaker turns tools off). Without tools the prompt is the configured one.
  request.system_prompt = model.system_prompt;
  if (tools_ != nullptr && !tools_->tools().empty()) {
    if (!request.system_prompt.empty()) request.system_prompt += "\n\n";
    request.system_prompt += kEnvelopeExplanation;
  }
  request.max_output_tokens = model.max_output_tokens;
  request.parameters = model.parameters;
  if (!tools_off_) {
    for (const auto& [name, tool] : tools_->tools())
      request.tools.push_back(tool.descriptor->provider_tool());
  }
  return request;
}

std::vector<PlannedCall> TurnRunner::plan_calls(const AssembledResponse& response) {
  std::vector<PlannedCall> calls;
  std::unordered_set<std::string> in_response;  // ids this response already uses
  for (const AssembledToolCall& call : response.tool_calls) {
    PlannedCall planned;
    planned.call_node_id = new_id();
    planned.result_node_id = new_id();
    // Whatever the provider sent must be storable: bad UTF-8 becomes U+FFFD (the name then matches no tool).
    planned.original_id = utf8_sanitized(call.provider_id);
    planned.name = utf8_sanitized(call.name);
    planned.arguments_text = call.arguments_text;
    // Spec §2: an empty id, or one the thread's history already has, gets a thread-unique replacement
    // before it is persisted.
    planned.tool_call_id = call.provider_id;
    if (planned.tool_call_id.empty() || actor_->context().uses_tool_call_id(planned.tool_call_id) ||
        in_response.contains(planned.tool_call_id)) {
      planned.tool_call_id = "call_" + new_id();
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

Result<json> TurnRunner::tool_call_body(const PlannedCall& call, const std::string& assistant_node_id) {
  json body = KEEL_TRY(encode_tool_call(ToolCallBody{.tool_call_id = call.tool_call_id,
                                                     .name = call.name,
                                                     .arguments = call.arguments,
                                                     .assistant_node_id = assistant_node_id}));
  if (call.original_id != call.tool_call_id) body["providerToolCallId"] = call.original_id;
  if (call.argument_error) body["argumentsText"] = utf8_sanitized(call.arguments_text);
  return body;
}

Result<void> TurnRunner::answer_unanswered(Transaction& tx, std::vector<NodeRecord>& out,
                                           const std::string& why,
                                           const std::optional<std::string>& in_flight) {
  for (const PlannedCall& call : unanswered_) {
    const bool running = in_flight && *in_flight == call.tool_call_id;
    const std::string text = running ? why + " before the tool finished; it may have partly run."
                                     : why + " before the tool ran; it was not run.";
    auto body = KEEL_TRY(encode_tool_result(ToolResultBody{
        .tool_call_id = call.tool_call_id, .content = text_result(text).content, .is_error = true}));
    body["interrupted"] = true;
    out.push_back(KEEL_TRY(engine_.threads().append(
        tx, make_node(call.result_node_id, thread_id(), run_.id, NodeKind::kToolResult, std::move(body)))));
  }
  return {};
}

std::vector<std::string> TurnRunner::count_result(bool failed, bool refused) {
  std::vector<std::string> notices;
  if (refused) return notices;  // user and policy refusals neither count nor reset (spec §1)
  if (!failed) {
    run_.failure_streak = 0;
    return notices;
  }
  run_.failure_streak += 1;
  if (run_.failure_streak == kFailuresBeforeReminder) notices.push_back(kReminderText);
  if (run_.failure_streak >= kFailuresBeforeToolsOff && !tools_off_) {
    tools_off_ = true;
    notices.push_back(kToolsOffText);
  }
  return notices;
}

Result<void> TurnRunner::load_environment() {
  model_ = engine_.options().model;
  // One generation, taken atomically, for the check and for the binding (spec §4): a tool replaced in
  // between cannot slip into a run that was verified against its predecessor.
  if (!generation_) generation_ = engine_.deps().tools->snapshot();
  if (!run_.snapshot_id) return {};
  auto tx = KEEL_TRY(engine_.store().begin(TxMode::kRead));
  EnvironmentSnapshotRecord snapshot = KEEL_TRY(engine_.snapshots().get(*tx, *run_.snapshot_id));
  KEEL_TRY(tx->commit());
  // Every runner verifies, not only a recovered one: a resumed run (run.resume) continues a run that
  // started under an earlier configuration just as a recovered one does, and for a run admitted a moment
  // ago the check costs one digest of a small body.
  KEEL_TRY(verify_environment(snapshot, engine_.options().transport, *generation_));
  RunEnvironment env = KEEL_TRY(environment_of(snapshot));
  model_ = std::move(env.model);
  snapshot_tools_ = std::move(env.tool_names);
  return {};
}

asio::awaitable<void> TurnRunner::run() {
  std::optional<Error> thrown;
  try {
    co_await run_turn();
  } catch (const std::exception& e) {
    thrown = Error(codes::kInternal, std::string("the turn stopped on an unexpected error: ") + e.what());
  }
  // Not co_await inside the handler: C++ forbids it there.
  if (thrown) {
    co_await end_after_failure(*thrown);
  } else if (failed_write_) {
    Error refused(failed_write_->code(),
                  "keel could not record the turn's progress: " + failed_write_->message());
    co_await end_after_failure(std::move(refused));
  }
  // The last events (turn.complete among them) go out from the completion handler, in the same strand step
  // that frees the thread: a client that submits the moment it sees turn.complete must find it free.
}

asio::awaitable<void> TurnRunner::end_after_failure(Error cause) {
  failed_write_.reset();
  co_await finish_failed(std::move(cause));
  if (!failed_write_) co_return;
  // Not even the failure could be written (the store refuses every write, say).
  const Error why = *failed_write_;
  actor_->mark_stranded(Error(codes::kTurnUnpersisted,
                              "turn " + run_.turn_id + " could not record its end (" + why.to_string() +
                                  "); the thread takes no new work until keel restarts and recovers the run"));
  publish("run.updated", {{"runId", run_.id},
                          {"state", to_string(run_.state)},
                          {"revision", run_.revision},
                          {"persisted", false},
                          {"error", error_json(why)}});
  complete_turn("error", {{"error", error_json(why)}, {"persisted", false}});
}

asio::awaitable<void> TurnRunner::run_turn() {
  if (auto loaded = load_environment(); !loaded) {
    tools_ = ToolRegistry::empty_generation();
    if (continuing_) {  // the open calls get results, so the history stays valid for a new turn
      auto tx = engine_.store().begin(TxMode::kRead);
      if (tx) {
        if (auto calls = calls_without_results(**tx)) unanswered_ = *calls;
        (void)(*tx)->commit();
      }
    }
    co_await finish_failed(loaded.error());
    co_return;
  }
  tools_ = bind_tools();
  tools_off_ = run_.failure_streak >= kFailuresBeforeToolsOff;
  if (continuing_) {
    const bool goes_on = co_await continue_wait();
    if (!goes_on) co_return;
  }
  // (Not `while (co_await step())`: g++ 12 miscompiles co_await in a loop condition.)
  for (;;) {
    const bool more = co_await step();
    if (!more) break;
  }
  co_return;
}

asio::awaitable<bool> TurnRunner::step() {
  if (cancel_.is_cancelled()) {
    co_await finish_interrupted("", std::nullopt);
    co_return false;
  }
  // §1 token budget: checked before each request, so a paused run resumes with a fresh request.
  const TokenUsage used = usage_from_json(run_.usage);
  if (run_.budget_tokens && used.total() >= *run_.budget_tokens) {
    const uint64_t initiated = stop_admitting();
    if (!actor_->gate().answered(initiated)) co_await wait_admissions(initiated);
    auto paused =
        engine_.write([&](Transaction& tx) -> Result<std::pair<std::vector<NodeRecord>, RunRecord>> {
          // Steers admitted before the pause go into the history now, so a new turn started instead of a
          // resume still shows them.
          std::vector<NodeRecord> nodes;
          KEEL_TRY(materialize_steers(tx, nodes));
          RunUpdate update;
          update.stop_reason = "budget_pause";
          RunRecord run = KEEL_TRY(engine_.runs().transition_from(tx, run_, RunState::kBudgetPaused, update));
          return std::make_pair(std::move(nodes), std::move(run));
        });
    if (!paused) {
      report_unpersisted(paused.error());
      co_return false;
    }
    run_ = paused->second;
    follow(paused->first);
    publish_nodes(paused->first);
    publish_run();
    complete_turn("budget_pause", {{"usage", usage_json(used)}, {"budgetTokens", *run_.budget_tokens}});
    co_return false;
  }

  // Spec §3's cutoff: the steers admitted so far go onto the leaf, in admission order, exactly once per
  // request and before its context is built; a steer admitted later waits for the next request.
  const uint64_t initiated = actor_->gate().started();  // the cutoff's one synchronous point
  if (!actor_->gate().answered(initiated)) co_await wait_admissions(initiated);
  if (actor_->gate().take_admitted() && has_pending_steers()) {
    auto taken = engine_.write([&](Transaction& tx) -> Result<std::vector<NodeRecord>> {
      std::vector<NodeRecord> nodes;
      KEEL_TRY(materialize_steers(tx, nodes));
      return nodes;
    });
    if (!taken) {
      report_unpersisted(taken.error());
      co_return false;
    }
    follow(*taken);
    publish_nodes(*taken);
  }
  auto request = build_request();
  if (!request) {
    co_await finish_failed(request.error());
    co_return false;
  }
  const CompactionSettings& compaction = engine_.options().compaction;
  const int64_t window = model_.context_window_tokens;
  const int64_t reserved = model_.max_output_tokens.value_or(0);
  if (needs_compaction(*request, reserved, window, compaction.threshold)) {
    const int64_t before = estimate_request_tokens(*request);
    if (!compaction.enabled) {
      co_await finish_failed(Error(codes::kContextWindowExceeded,
                                   "the next request (about " + std::to_string(before) + " tokens and " +
                                       std::to_string(reserved) + " for the reply) would not fit the " +
                                       std::to_string(window) + "-token window of '" + model_.model +
                                       "', and compaction is off"));
      co_return false;
    }
    const bool compacted = co_await compact(before);
    if (!compacted) co_return false;
    request = build_request();
    if (!request) {
      co_await finish_failed(request.error());
      co_return false;
    }
    // The window itself, not the threshold: a compacted request that fits is sent.
    if (needs_compaction(*request, reserved, window, 1.0)) {
      co_await finish_failed(Error(codes::kContextWindowExceeded,
                                   "even compacted, the next request (about " +
                                       std::to_string(estimate_request_tokens(*request)) +
                                       " tokens) would not fit the " + std::to_string(window) +
                                       "-token window of '" + model_.model + "'"));
      co_return false;
    }
  }

  const std::string assistant_id = new_id();
  publish("item.start", {{"itemId", assistant_id}, {"kind", "assistant_message"}, {"turnId", run_.turn_id}});

  auto inbox = std::make_shared<Inbox>(actor_->strand, engine_.io_lifetime());
  CancellationRegistration on_cancel = cancel_.on_cancel([to = inbox->sender()] { to.push(Interrupted{}); });
  // The request's own cancellation: fired by an interrupt, or by the loop when the stream turns out
  // malformed and must be abandoned.
  auto request_cancel = std::make_shared<CancellationSource>();
  CancellationRegistration forward =
      cancel_.on_cancel([request_cancel] { request_cancel->cancel("interrupted"); });
  engine_.crash_point("model.request.before");
  engine_.deps().provider->stream(std::move(*request), request_cancel->token(),
                                  std::make_shared<InboxSink>(inbox->sender()));

  ResponseAssembler assembler;
  std::optional<Error> stream_error;
  while (true) {
    flush_before_waiting(*inbox);
    LoopInput input = co_await inbox->next();
    if (std::holds_alternative<Interrupted>(input)) {
      co_await finish_interrupted(assembler.partial_text(), std::nullopt);
      co_return false;
    }
    if (auto* done = std::get_if<StreamDone>(&input)) {
      if (!done->result) stream_error = done->result.error();
      break;
    }
    if (auto* event = std::get_if<ProviderEvent>(&input)) {
      if (auto added = assembler.add(*event); !added) {
        stream_error = added.error();
        request_cancel->cancel("protocol error");
        break;
      }
      if (auto* text = std::get_if<provider_event::TextDelta>(event)) {
        publish("item.delta", {{"itemId", assistant_id}, {"text", text->text}});
      } else if (auto* reasoning = std::get_if<provider_event::ReasoningDelta>(event)) {
        publish("item.delta", {{"itemId", assistant_id}, {"reasoning", reasoning->text}});
      }
    }
  }
  if (stream_error) {
    if (stream_error->code() == codes::kCancelled && cancel_.is_cancelled()) {
      co_await finish_interrupted(assembler.partial_text(), std::nullopt);
      co_return false;
    }
    Error error = stream_error->code().starts_with("provider.") || stream_error->code() == codes::kCancelled
                      ? *stream_error
                      : Error(codes::kProviderFailed, stream_error->to_string(), stream_error->retryable());
    co_await finish_failed(error);
    co_return false;
  }
  auto response = assembler.finish();
  if (!response) {
    // Fail closed: keep what the model said for the record, run no tool.
    AssistantMessageBody body{
        .content = {}, .stop_reason = AssistantStopReason::kError, .provider_stop_reason = "protocol_error"};
    ContentBlock said;
    said.text = utf8_sanitized(assembler.partial_text());
    said.text.resize(utf8_prefix_length(said.text, kMaxReplyBytes));
    if (!said.text.empty()) body.content.push_back(std::move(said));
    std::optional<NewNode> node;
    if (auto encoded = encode_assistant_message(body)) {
      (*encoded)["protocolError"] = response.error().message();
      node = make_node(assistant_id, thread_id(), run_.id, NodeKind::kAssistantMessage, std::move(*encoded));
    }
    co_await finish_failed(response.error(), std::move(node));
    co_return false;
  }

  if (std::optional<AssistantMessageBody> refused = bound_reply(*response)) {
    // Fail closed, as for a protocol error: the reply's beginning stays for the record, no call runs.
    const size_t bytes = reply_bytes(*response);
    std::optional<NewNode> node;
    if (auto encoded = encode_assistant_message(*refused)) {
      node = make_node(assistant_id, thread_id(), run_.id, NodeKind::kAssistantMessage, std::move(*encoded));
    }
    co_await finish_failed(
        Error(codes::kProviderReplyTooLarge, "the model's reply takes " + std::to_string(bytes) +
                                                 " bytes, more than the " + std::to_string(kMaxReplyBytes) +
                                                 " keel keeps of one reply"),
        std::move(node));
    co_return false;
  }
  std::vector<PlannedCall> calls = plan_calls(*response);
  const TokenUsage step_usage = response->usage;
  const TokenUsage total = add(used, step_usage);
  // With tools off (the breaker), this reply is the last whatever it asks for.
  const bool last_reply = calls.empty() || tools_off_;
  // Spec §3, the turn-end race: the reply would end the turn. Stop admitting, then wait for the
  // admissions already initiated; if steers were admitted since the last cutoff, the turn makes one more
  // request instead (and admits again). Whether a steer is admissible is decided on this strand, so none
  // can slip in between this decision and the commit below.
  if (last_reply) {
    const uint64_t ending_at = stop_admitting();
    if (!actor_->gate().answered(ending_at)) co_await wait_admissions(ending_at);
  }
  // Whatever the reply's stop reason (end, max_tokens, content_filter): a steer admitted meanwhile is
  // answered by one more request (spec §3), not left to the history.
  const bool steers_waiting = actor_->gate().admitted_since_cutoff();
  const bool final = last_reply && !steers_waiting;
  if (last_reply && !final) actor_->gate().reopen();
  const bool runs_tools = !calls.empty() && !tools_off_;
  // Tools are off (the breaker) and the reply that was to be the last still asks for tools: its calls get
  // "not run" results below and the turn fails with turn.tools_disabled ("tool_use" is not an ending).
  std::optional<Error> tools_refused;
  if (final && tools_off_ && !calls.empty()) {
    tools_refused = Error(codes::kTurnToolsDisabled,
                          "tools were disabled after " + std::to_string(run_.failure_streak) +
                              " failed tool calls in a row, and the model's final reply asked for " +
                              std::to_string(calls.size()) + " tool call(s) instead of answering; none was run");
  }
  // The first call is decided now, so that when it must be recorded as dispatched before it runs, that
  // record commits with the message that made the call: one sync fewer for a write.
  std::optional<CallDecision> first_decision;
  if (runs_tools && !final) first_decision = decide(calls.front());
  const bool dispatch_first = first_decision && first_decision->needs_dispatch_record();
  AssistantMessageBody body{.content = response->content,
                            .stop_reason = assistant_reason(response->stop_reason),
                            .provider_stop_reason = response->provider_stop_reason,
                            .usage = usage_json(step_usage)};
  auto encoded = encode_assistant_message(body);
  if (!encoded) {
    co_await finish_failed(encoded.error());
    co_return false;
  }
  struct Written {
    NodeRecord assistant;
    std::vector<NodeRecord> extra;
    RunRecord run;
  };
  engine_.crash_point("model.response.before_commit");
  auto written = engine_.write([&](Transaction& tx) -> Result<Written> {
    Written w;
    w.assistant = KEEL_TRY(engine_.threads().append(
        tx, make_node(assistant_id, thread_id(), run_.id, NodeKind::kAssistantMessage, *encoded)));
    // Every call's stable node commits with the message that made it; a call then only needs its result
    // (and, when repeating it is not safe, its dispatch) written.
    for (const PlannedCall& call : calls) {
      w.extra.push_back(KEEL_TRY(
          engine_.threads().append(tx, make_node(call.call_node_id, thread_id(), run_.id, NodeKind::kToolCall,
                                                 KEEL_TRY(tool_call_body(call, assistant_id))))));
      if (tools_off_) {
        // Tools are off: each call still gets a result, so every provider accepts the history.
        auto result_body = KEEL_TRY(encode_tool_result(ToolResultBody{
            .tool_call_id = call.tool_call_id,
            .content = text_result("Not run: tools are disabled for the rest of this turn.").content,
            .is_error = true}));
        w.extra.push_back(
            KEEL_TRY(engine_.threads().append(tx, make_node(call.result_node_id, thread_id(), run_.id,
                                                            NodeKind::kToolResult, std::move(result_body)))));
      }
    }
    RunUpdate update;
    update.usage = usage_json(total);
    update.step_cursor = run_.step_cursor + 1;
    update.provider_stop_reason = response->provider_stop_reason;
    if (dispatch_first) update.pending_tool = dispatch_record(calls.front());
    if (final) update.stop_reason = std::string(to_string(response->stop_reason));
    if (tools_refused) {
      update.stop_reason = "error";
      update.error = tools_refused->to_string();
    }
    const RunState next = tools_refused ? RunState::kFailed
                          : final       ? RunState::kCompleted
                          : runs_tools ? RunState::kExecutingTool
                                       : RunState::kStreamingModel;
    w.run = KEEL_TRY(engine_.runs().transition_from(tx, run_, next, update));
    return w;
  });
  if (!written) {
    report_unpersisted(written.error());
    co_return false;
  }
  run_ = written->run;
  if (runs_tools) unanswered_ = calls;
  follow(written->assistant);
  follow(written->extra);
  publish("item.complete", {{"itemId", assistant_id},
                            {"kind", "assistant_message"},
                            {"turnId", run_.turn_id},
                            {"node", node_json(written->assistant)}});
  publish_nodes(written->extra);
  json usage_event = {{"turnId", run_.turn_id},
                      {"runId", run_.id},
                      {"usage", usage_json(step_usage)},
                      {"total", usage_json(total)}};
  if (model_.price) {
    usage_event["usage"]["costUsd"] = providers::cost_of(step_usage, *model_.price);
    usage_event["total"]["costUsd"] = providers::cost_of(total, *model_.price);
  }
  publish("token.usage", std::move(usage_event));
  publish_run();
  if (tools_refused) {
    complete_turn("error",
                  {{"providerStopReason", response->provider_stop_reason}, {"error", error_json(*tools_refused)}});
    co_return false;
  }
  if (final) {
    json extra = {{"providerStopReason", response->provider_stop_reason}};
    // max_tokens and content_filter: the UI says the reply may be incomplete.
    if (response->stop_reason == StopReason::kMaxTokens ||
        response->stop_reason == StopReason::kContentFilter) {
      extra["mayBeIncomplete"] = true;
    }
    complete_turn(std::string(to_string(response->stop_reason)), std::move(extra));
    co_return false;
  }
  if (!runs_tools) co_return true;  // steers wait: the next request reads them
  for (size_t i = 0; i < calls.size(); ++i) {
    const bool more_after = i + 1 < calls.size();
    // The argument is built in a statement of its own: g++ 12 destroys a conditional-expression temporary
    // passed to a coroutine twice.
    std::optional<CallDecision> decided;
    if (i == 0) decided = first_decision;
    const bool ran = co_await run_call(calls[i], more_after, std::move(decided), i == 0 && dispatch_first);
    if (!ran) co_return false;
  }
  co_return true;
}

TurnRunner::CallDecision TurnRunner::decide(const PlannedCall& call, bool approved) const {
  CallDecision d;
  if (tools_off_) {
    d.immediate_error = Error(codes::kToolFailed, "Not run: tools are disabled for the rest of this turn.");
  } else if (call.argument_error) {
    d.immediate_error = call.argument_error;
  } else if ((d.tool = tools_->find(call.name)) == nullptr) {
    std::string names;
    for (const auto& [name, registered] : tools_->tools()) names += (names.empty() ? "" : ", ") + name;
    d.immediate_error =
        Error(codes::kToolUnknown, "There is no tool named '" + call.name +
                                       "'. Available tools: " + (names.empty() ? "none" : names) + ".");
  } else if (auto valid = d.tool->validator->validate(call.arguments); !valid) {
    d.immediate_error = Error(valid.error().code(),
                              "The arguments do not match the tool's schema: " + valid.error().message() +
                                  ". Fix them and call again.");
  } else if (auto resolved = d.tool->implementation->resolve_target(call.arguments); !resolved) {
    d.immediate_error = resolved.error();
  } else if (!canonical_json(target_json(*resolved))) {
    // A file whose name is not UTF-8: it can be neither shown to a person for approval nor recorded, and
    // approving a name shown with replacement characters could let another file pass for it.
    d.immediate_error = Error(codes::kJsonInvalidUtf8,
                              "the call's target (" + shown_json(target_json(*resolved)) +
                                  ") is not valid UTF-8, so keel cannot show or record it; it was not run");
  } else {
    d.target = *resolved;
    GateRequest gate{thread_id(), call.tool_call_id, d.tool->descriptor.get(), &call.arguments, d.target,
                     run_.turn_id};
    d.verdict = engine_.deps().gatekeeper->check(gate);
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

json TurnRunner::dispatch_record(const PlannedCall& call) {
  return json{{"toolCallId", call.tool_call_id}, {"name", call.name}, {"nodeId", call.call_node_id}};
}

Result<TurnRunner::ResultWritten> TurnRunner::append_result(Transaction& tx, const PlannedCall& call,
                                                            json body,
                                                            const std::vector<std::string>& notices,
                                                            RunState after) {
  ResultWritten w;
  w.first.push_back(KEEL_TRY(engine_.threads().append(
      tx, make_node(call.result_node_id, thread_id(), run_.id, NodeKind::kToolResult, std::move(body)))));
  held_notices_.insert(held_notices_.end(), notices.begin(), notices.end());
  if (after != RunState::kExecutingTool) {
    for (const std::string& text : std::exchange(held_notices_, {})) {
      auto notice = KEEL_TRY(encode_notice(NoticeBody{.text = text, .for_model = true}));
      w.first.push_back(KEEL_TRY(engine_.threads().append(
          tx, make_node(new_id(), thread_id(), run_.id, NodeKind::kNotice, std::move(notice)))));
    }
  }
  RunUpdate update;
  update.clear_pending_tool = run_.pending_tool.has_value();
  update.failure_streak = run_.failure_streak;
  w.second = KEEL_TRY(engine_.runs().transition_from(tx, run_, after, update));
  return w;
}

asio::awaitable<bool> TurnRunner::run_call(PlannedCall call, bool more_after,
                                           std::optional<CallDecision> decided, bool dispatch_recorded) {
  const std::string& result_node_id = call.result_node_id;
  // The run's state once this call has its result.
  const RunState after = more_after ? RunState::kExecutingTool : RunState::kStreamingModel;

  if (cancel_.is_cancelled()) {
    co_await finish_interrupted("", std::nullopt);
    co_return false;
  }
  // Whether the call can run, decided before anything is written (for a response's first call, before
  // the assistant message was committed, so its dispatch could commit with it).
  // Copies, not references: g++ 12 mishandles references to coroutine-frame locals across co_await.
  CallDecision decision = decided ? std::move(*decided) : decide(call);
  const std::optional<Error> immediate_error = decision.immediate_error;
  const std::optional<std::string> refusal = decision.refusal;
  const RegisteredTool* tool = decision.tool;

  if (immediate_error || refusal) {
    // Only the result is written: nothing ran.
    const bool refused = refusal.has_value();
    ToolResult result = refused
                            ? text_result("The call was refused and not run: " + *refusal)
                            : text_result(immediate_error->message(), {{"code", immediate_error->code()}});
    std::vector<std::string> notices = count_result(!refused, refused);
    auto written = engine_.write([&](Transaction& tx) -> Result<ResultWritten> {
      auto body = KEEL_TRY(encode_tool_result(ToolResultBody{.tool_call_id = call.tool_call_id,
                                                             .content = result.content,
                                                             .is_error = true,
                                                             .details = result.details}));
      if (refused) body["refused"] = true;
      return append_result(tx, call, std::move(body), notices, after);
    });
    if (!written) {
      report_unpersisted(written.error());
      co_return false;
    }
    took_result(call.tool_call_id, std::move(*written));
    co_return true;
  }

  if (decision.ask || decision.interaction) {
    co_await suspend(call, std::move(decision));
    co_return false;
  }

  if (decision.needs_dispatch_record() && !dispatch_recorded) {
    // Running it twice is not safe: that it was dispatched commits before it runs, so recovery knows the
    // outcome may be unknown. A retry-safe call needs no such write; recovery runs it again.
    auto dispatched = engine_.write([&](Transaction& tx) -> Result<RunRecord> {
      RunUpdate update;
      update.pending_tool = dispatch_record(call);
      return engine_.runs().transition_from(tx, run_, RunState::kExecutingTool, update);
    });
    if (!dispatched) {
      report_unpersisted(dispatched.error());
      co_return false;
    }
    run_ = *dispatched;
  }
  publish("item.start", {{"itemId", result_node_id},
                         {"kind", "tool_result"},
                         {"turnId", run_.turn_id},
                         {"toolCallId", call.tool_call_id},
                         {"name", call.name}});

  auto inbox = std::make_shared<Inbox>(actor_->strand, engine_.io_lifetime());
  CancellationRegistration on_cancel = cancel_.on_cancel([to = inbox->sender()] { to.push(Interrupted{}); });
  ToolCallContext context;
  context.tool_call_id = call.tool_call_id;
  context.thread_id = thread_id();
  context.cancel = cancel_;
  engine_.crash_point("tool.execute.before");
  in_flight_call_ = call.tool_call_id;
  // On the engine's tool workers, never on this I/O thread, within the call's time budget (its timeout
  // arrives as a tool.timed_out outcome); nothing the tool reports after this frame ends reaches the loop.
  const std::unique_ptr<ToolCallHandle> running = engine_.dispatch_tool(
      *tool, std::move(context), call.arguments,
      ToolCallSinks{
          .progress = [to = inbox->sender()](ToolProgress progress) { to.push(std::move(progress)); },
          .done = [to = inbox->sender()](Result<ToolResult> result) { to.push(ToolDone{std::move(result)}); }});
  std::optional<Result<ToolResult>> outcome;
  while (!outcome) {
    flush_before_waiting(*inbox);
    LoopInput input = co_await inbox->next();
    if (std::holds_alternative<Interrupted>(input)) {
      co_await finish_interrupted("", call.tool_call_id);
      co_return false;
    }
    if (auto* progress = std::get_if<ToolProgress>(&input)) {
      publish("item.delta", {{"itemId", result_node_id},
                             {"toolProgress", {{"text", progress->text}, {"details", progress->details}}}});
    } else if (auto* done = std::get_if<ToolDone>(&input)) {
      outcome = std::move(done->result);
    }
  }
  const bool failed = !*outcome;
  ToolResult result = failed ? text_result(outcome->error().message(), {{"code", outcome->error().code()}})
                             : std::move(**outcome);
  BoundedToolOutput bounded = bound_tool_output(std::move(result), engine_.options().max_tool_output_chars);
  // The side effect happened and its result is not durable yet: the window recovery classifies by the
  // tool's recovery class.
  engine_.crash_point("tool.result.before_commit");
  std::vector<std::string> notices = count_result(failed, false);
  // Error text counts too: a failing tool may quote what it read (a file name, a server's message).
  const std::optional<DataSource> source = untrusted_source(*tool->descriptor, decision.target);
  auto settled = engine_.write([&](Transaction& tx) -> Result<ResultWritten> {
    auto body = KEEL_TRY(encode_tool_result(ToolResultBody{.tool_call_id = call.tool_call_id,
                                                           .content = bounded.content,
                                                           .is_error = failed,
                                                           .details = bounded.details,
                                                           .untrusted = source}));
    return append_result(tx, call, std::move(body), notices, after);
  });
  if (!settled) {
    report_unpersisted(settled.error());
    co_return false;
  }
  took_result(call.tool_call_id, std::move(*settled));
  co_return true;
}

json TurnRunner::approval_request(const PlannedCall& call, const CallDecision& decision) const {
  // What the call will do is computed now, before the approval is persisted, and stored with it: the
  // prompt shown again after a restart is the one shown first.
  const CallPreview preview = preview_call(*decision.tool->implementation, call.arguments, decision.target);
  // A target resolved from the workspace may name a file whose name is not UTF-8: stored as shown.
  return storable_json(approval_request_json(ApprovalSubject{.tool_call_id = call.tool_call_id,
                                                             .call_node_id = call.call_node_id,
                                                             .descriptor = decision.tool->descriptor.get(),
                                                             .arguments = &call.arguments,
                                                             .target = decision.target,
                                                             .verdict = decision.verdict,
                                                             .preview = &preview}));
}

asio::awaitable<void> TurnRunner::suspend(PlannedCall call, CallDecision decision) {
  // Steers already admitted stay pending; the continuation's first request takes them.
  const uint64_t initiated = actor_->gate().hold();
  if (!actor_->gate().answered(initiated)) co_await wait_admissions(initiated);
  const bool approval = decision.ask;
  const std::string wait_id = new_id();
  json pending = dispatch_record(call);
  pending[approval ? "approvalId" : "interactionId"] = wait_id;
  if (!held_notices_.empty()) pending[kHeldNoticesKey] = held_notices_;
  struct Waiting {
    RunRecord run;
    std::optional<ApprovalRecord> approval;
    std::optional<InteractionRecord> interaction;
  };
  auto written = engine_.write([&](Transaction& tx) -> Result<Waiting> {
    Waiting w;
    if (approval) {
      ApprovalRecord record;
      record.id = wait_id;
      record.run_id = run_.id;
      record.tool_call_id = call.tool_call_id;
      record.request = approval_request(call, decision);
      w.approval = KEEL_TRY(engine_.interactions().create_approval(tx, std::move(record)));
    } else {
      const InteractionPlan& plan = *decision.interaction;
      InteractionRecord record;
      record.id = wait_id;
      record.run_id = run_.id;
      record.kind = plan.kind;
      record.request = {{"toolCallId", call.tool_call_id},
                        {"toolName", call.name},
                        {"callNodeId", call.call_node_id},
                        {"prompt", plan.request}};
      if (plan.due_in_ms) record.due_at = clock().now_unix_ms() + *plan.due_in_ms;
      w.interaction = KEEL_TRY(engine_.interactions().create_interaction(tx, std::move(record)));
    }
    RunUpdate update;
    update.pending_tool = pending;
    w.run = KEEL_TRY(engine_.runs().transition_from(
        tx, run_, approval ? RunState::kWaitingApproval : RunState::kWaitingInteraction, update));
    return w;
  });
  if (!written) {
    report_unpersisted(written.error());
    co_return;
  }
  run_ = written->run;
  publish_run();
  HeldWait held;
  held.run_id = run_.id;
  held.kind = approval ? "approval" : "interaction";
  held.id = wait_id;
  held.tools = tools_;  // the answer is checked, and the continuation bound, with this run's generation
  actor_->hold(std::move(held));
  if (approval) {
    publish("approval.request", approval_event(*written->approval, run_));
  } else {
    publish("interaction.request", interaction_event(*written->interaction, run_));
    if (written->interaction->due_at) engine_.arm_timer(actor_, *written->interaction);
  }
}

Result<std::vector<PlannedCall>> TurnRunner::calls_without_results(Transaction& tx) {
  ThreadRecord thread = KEEL_TRY(engine_.threads().get(tx, thread_id()));
  std::vector<PlannedCall> calls;
  if (!thread.leaf_node_id) return calls;
  // Back from the leaf to the run's last assistant message: its calls, and the results written since.
  std::unordered_set<std::string> answered_ids;
  std::vector<NodeRecord> call_nodes;
  std::optional<std::string> at = thread.leaf_node_id;
  while (at) {
    NodeRecord node = KEEL_TRY(engine_.threads().get_node(tx, *at));
    if (node.kind == NodeKind::kAssistantMessage) break;
    if (node.kind == NodeKind::kToolResult) answered_ids.insert(node.body.value("toolCallId", ""));
    if (node.kind == NodeKind::kToolCall && node.run_id == run_.id) call_nodes.push_back(node);
    at = node.parent_id;
  }
  std::reverse(call_nodes.begin(), call_nodes.end());
  for (const NodeRecord& node : call_nodes) {
    ToolCallBody body = KEEL_TRY(decode_tool_call(node.body));
    if (answered_ids.contains(body.tool_call_id)) continue;
    PlannedCall call;
    call.call_node_id = node.id;
    call.result_node_id = new_id();
    call.tool_call_id = body.tool_call_id;
    call.original_id = node.body.value("providerToolCallId", body.tool_call_id);
    call.name = body.name;
    call.arguments = body.arguments;
    if (node.body.contains("argumentsText")) {
      call.arguments_text = node.body.value("argumentsText", "");
      call.argument_error =
          Error(codes::kToolArgumentsNotJson,
                "the arguments are not a valid JSON object: " + call.arguments_text.substr(0, 200));
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

asio::awaitable<bool> TurnRunner::continue_wait() {
  actor_->gate().reopen();
  struct Pending {
    std::vector<PlannedCall> calls;
    std::optional<ApprovalRecord> approval;
    std::optional<InteractionRecord> interaction;
  };
  Result<Pending> loaded = [&]() -> Result<Pending> {
    auto tx = KEEL_TRY(engine_.store().begin(TxMode::kRead));
    Pending p;
    run_ = KEEL_TRY(engine_.runs().get(*tx, run_.id));
    p.calls = KEEL_TRY(calls_without_results(*tx));
    const json pending = run_.pending_tool.value_or(json::object());
    if (pending.contains("approvalId")) {
      p.approval =
          KEEL_TRY(engine_.interactions().get_approval(*tx, pending["approvalId"].get<std::string>()));
    } else if (pending.contains("interactionId")) {
      p.interaction =
          KEEL_TRY(engine_.interactions().get_interaction(*tx, pending["interactionId"].get<std::string>()));
    }
    KEEL_TRY(tx->commit());
    return p;
  }();
  if (!loaded) {
    co_await finish_failed(loaded.error());
    co_return false;
  }
  unanswered_ = loaded->calls;
  // The breaker's notices the waiting runner held for the end of this response.
  if (const json pending = run_.pending_tool.value_or(json::object());
      pending.contains(kHeldNoticesKey) && pending[kHeldNoticesKey].is_array()) {
    for (const json& text : pending[kHeldNoticesKey]) {
      if (text.is_string()) held_notices_.push_back(text.get<std::string>());
    }
  } else if (tools_off_ && !loaded->calls.empty()) {
    // Tools went off during this response and the process stopped before its last result, where the
    // notice would have been written: it is written there now.
    held_notices_.push_back(kToolsOffText);
  }
  if (cancel_.is_cancelled()) {  // the wait was withdrawn: every open call is answered as interrupted
    co_await finish_interrupted("", std::nullopt);
    co_return false;
  }
  std::vector<PlannedCall> calls = loaded->calls;
  // run.resolveUncertain{retry}: the person chose to run this dispatched call again, which approves it.
  const json pending = run_.pending_tool.value_or(json::object());
  const std::string retried_call =
      pending.value("resolution", "") == "retry" ? pending.value("toolCallId", "") : std::string();
  for (size_t i = 0; i < calls.size(); ++i) {
    const bool more_after = i + 1 < calls.size();
    const bool waited_on = i == 0 && (loaded->approval || loaded->interaction);
    bool goes_on = false;
    if (waited_on && loaded->approval) {
      goes_on = co_await run_approved(calls[i], more_after, *loaded->approval);
    } else if (waited_on) {
      goes_on = co_await finish_interaction(calls[i], more_after, *loaded->interaction);
    } else if (!retried_call.empty() && calls[i].tool_call_id == retried_call) {
      // Re-verified before dispatch as an approved call is (schema, target, the rules and host permissions
      // in force now; the tool's digest with the run's environment): a refusal still refuses it.
      std::optional<CallDecision> retried = decide(calls[i], /*approved=*/true);
      goes_on = co_await run_call(calls[i], more_after, std::move(retried), false);
    } else {
      goes_on = co_await run_call(calls[i], more_after, std::nullopt, false);
    }
    if (!goes_on) co_return false;
  }
  if (calls.empty() && run_.state != RunState::kStreamingModel) {
    // Nothing was left to answer (the results committed before a restart): the run goes on to the model.
    auto moved = engine_.write([&](Transaction& tx) -> Result<RunRecord> {
      RunUpdate update;
      update.clear_pending_tool = run_.pending_tool.has_value();
      return engine_.runs().transition_from(tx, run_, RunState::kStreamingModel, update);
    });
    if (!moved) {
      report_unpersisted(moved.error());
      co_return false;
    }
    run_ = *moved;
    publish_run();
  }
  co_return true;
}

asio::awaitable<bool> TurnRunner::run_approved(PlannedCall call, bool more_after, ApprovalRecord approval) {
  const json decision = approval.decision.value_or(json::object());
  const std::string choice = decision.value("decision", "");
  CallDecision d;
  if (choice != "accept" && choice != "acceptForSite") {
    std::string refusal = "the user declined the call";
    if (decision.contains("reason") && decision["reason"].is_string() &&
        !decision["reason"].get<std::string>().empty()) {
      refusal += ": " + decision["reason"].get<std::string>();
    }
    d.refusal = refusal + ". Do not repeat it; ask the user or choose another way.";
  } else {
    // Re-verified before dispatch (spec §6.1): the same tool, the same target, and a gatekeeper that still
    // does not refuse it under the rules and host permissions in force now.
    d = decide(call, /*approved=*/true);
    const json approved_tool = approval.request.value("tool", json::object());
    const ToolTarget approved_target = target_from_json(approval.request.value("target", json::object()));
    if (d.runs() && d.tool->descriptor->digest != approved_tool.value("digest", "")) {
      d.refusal = "the tool " + call.name +
                  " changed since it was approved; it was not run. Call it again to "
                  "ask for a new approval.";
    } else if (d.runs() && !(d.target == approved_target)) {
      d.refusal = "the call's target changed since it was approved (approved: " +
                  shown_json(target_json(approved_target)) + ", now: " + shown_json(target_json(d.target)) +
                  "); it was not run. Inspect the page again before deciding what to do.";
    } else if (d.ask) {
      d.ask = false;  // the person's approval is what the verdict asked for
      d.interaction = d.tool->implementation->plan_interaction(call.arguments);
    }
  }
  co_return co_await run_call(std::move(call), more_after, std::move(d), false);
}

asio::awaitable<bool> TurnRunner::finish_interaction(PlannedCall call, bool more_after,
                                                     InteractionRecord interaction) {
  const RunState after = more_after ? RunState::kExecutingTool : RunState::kStreamingModel;
  const RegisteredTool* tool = tools_->find(call.name);
  const json prompt = interaction.request.value("prompt", json::object());
  auto settled = engine_.write([&](Transaction& tx) -> Result<ResultWritten> {
    // Claimed once, in the transaction that appends the result: exactly one continuation writes it.
    InteractionRecord claimed = KEEL_TRY(engine_.interactions().claim(tx, interaction.id));
    const json response = claimed.response.value_or(json::object());
    ToolResult result;
    if (tool != nullptr) {
      result = tool->implementation->complete_interaction(prompt, response);
    } else {
      result = text_result("The answer to " + call.name + " was: " + shown_json(response));
    }
    BoundedToolOutput bounded = bound_tool_output(std::move(result), engine_.options().max_tool_output_chars);
    auto body = KEEL_TRY(encode_tool_result(ToolResultBody{.tool_call_id = call.tool_call_id,
                                                           .content = bounded.content,
                                                           .is_error = false,
                                                           .details = bounded.details}));
    body["interactionId"] = interaction.id;
    return append_result(tx, call, std::move(body), {}, after);
  });
  if (!settled) {
    report_unpersisted(settled.error());
    co_return false;
  }
  took_result(call.tool_call_id, std::move(*settled));
  publish_run();
  co_return true;
}

asio::awaitable<void> TurnRunner::wait_admissions(uint64_t ticket) {
  for (;;) {
    if (actor_->gate().answered(ticket)) break;
    flush_events();
    std::shared_ptr<AsyncInbox<uint64_t>> reports = actor_->gate().reports();
    co_await reports->next();
  }
}

asio::awaitable<bool> TurnRunner::compact(int64_t tokens_before) {
  const CompactionSettings& settings = engine_.options().compaction;
  const int64_t window = model_.context_window_tokens;
  const std::span<const Message> messages = actor_->context().messages();
  const auto tail_budget = static_cast<int64_t>(settings.tail_fraction * static_cast<double>(window));
  const std::optional<size_t> kept_from = choose_kept_tail(messages, tail_budget);
  if (!kept_from) {
    co_await finish_failed(Error(codes::kContextWindowExceeded,
                                 "the next request (about " + std::to_string(tokens_before) +
                                     " tokens) would not fit the " + std::to_string(window) +
                                     "-token window of '" + model_.model +
                                     "', and its most recent message alone is too large to compact around"));
    co_return false;
  }
  // Copied before the model is asked: nothing here may point into the context across the wait.
  CompactionBody body;
  body.replaced_to_node_id = messages[*kept_from - 1].source_node_id;
  body.tail.assign(messages.begin() + static_cast<std::ptrdiff_t>(*kept_from), messages.end());
  if (!body.tail.empty()) body.kept_from_node_id = body.tail.front().source_node_id;
  body.tokens_before = tokens_before;
  const auto transcript_bytes = static_cast<size_t>(
      std::max<int64_t>(4'096, (window - settings.summary_max_tokens) * 3 * 7 / 10));  // ~70% of the rest
  std::vector<Message> transcript;
  ProviderRequest request = summary_request(messages.first(*kept_from), model_.model,
                                            settings.summary_max_tokens, transcript_bytes, transcript);

  auto inbox = std::make_shared<Inbox>(actor_->strand, engine_.io_lifetime());
  CancellationRegistration on_cancel = cancel_.on_cancel([to = inbox->sender()] { to.push(Interrupted{}); });
  auto request_cancel = std::make_shared<CancellationSource>();
  CancellationRegistration forward =
      cancel_.on_cancel([request_cancel] { request_cancel->cancel("interrupted"); });
  engine_.deps().provider->stream(std::move(request), request_cancel->token(),
                                  std::make_shared<InboxSink>(inbox->sender()));
  std::string summary;
  std::optional<Error> failure;
  for (;;) {
    LoopInput input = co_await inbox->next();
    if (std::holds_alternative<Interrupted>(input)) {
      co_await finish_interrupted("", std::nullopt);
      co_return false;
    }
    if (auto* done = std::get_if<StreamDone>(&input)) {
      if (!done->result) failure = done->result.error();
      break;
    }
    if (auto* event = std::get_if<ProviderEvent>(&input)) {
      if (auto* text = std::get_if<provider_event::TextDelta>(event)) summary += text->text;
    }
  }
  if (!failure && summary.find_first_not_of(" \t\r\n") == std::string::npos) {
    failure = Error(codes::kProviderProtocol, "the model returned an empty summary");
  }
  if (failure) {
    co_await finish_failed(Error(codes::kContextCompactionFailed,
                                 "the history had to be compacted to fit the context window, and its summary "
                                 "failed: " + failure->to_string()));
    co_return false;
  }
  body.summary = std::move(summary);
  body.tokens_after = kTokensPerMessage + static_cast<int64_t>(body.summary.size() / 4) + estimate_tokens(body.tail);
  auto written = engine_.write([&](Transaction& tx) -> Result<NodeRecord> {
    auto encoded = KEEL_TRY(encode_compaction(body));
    return engine_.threads().append(
        tx, make_node(new_id(), thread_id(), run_.id, NodeKind::kCompaction, std::move(encoded)));
  });
  if (!written) {
    report_unpersisted(written.error());
    co_return false;
  }
  follow(*written);
  publish_nodes({*written});
  co_return true;
}

asio::awaitable<void> TurnRunner::finish_failed(Error error, std::optional<NewNode> assistant) {
  const uint64_t initiated = stop_admitting();
  if (!actor_->gate().answered(initiated)) co_await wait_admissions(initiated);
  auto written = engine_.write([&](Transaction& tx) -> Result<std::pair<std::vector<NodeRecord>, RunRecord>> {
    std::vector<NodeRecord> nodes;
    if (assistant) nodes.push_back(KEEL_TRY(engine_.threads().append(tx, std::move(*assistant))));
    KEEL_TRY(answer_unanswered(tx, nodes, "The turn failed (" + error.code() + ")", in_flight_call_));
    KEEL_TRY(materialize_steers(tx, nodes));  // ACKed steers stay in the history (spec §3, early end)
    RunUpdate update;
    update.stop_reason = "error";
    update.error = error.to_string();
    update.clear_pending_tool = run_.pending_tool.has_value();
    RunRecord run = KEEL_TRY(engine_.runs().transition_from(tx, run_, RunState::kFailed, update));
    return std::make_pair(std::move(nodes), std::move(run));
  });
  end_turn(std::move(written), "error", {{"error", error_json(error)}});
}

asio::awaitable<void> TurnRunner::finish_interrupted(std::string partial_text,
                                                     std::optional<std::string> in_flight_call_id) {
  const uint64_t initiated = stop_admitting();
  if (!actor_->gate().answered(initiated)) co_await wait_admissions(initiated);
  auto written = engine_.write([&](Transaction& tx) -> Result<std::pair<std::vector<NodeRecord>, RunRecord>> {
    std::vector<NodeRecord> nodes;
    if (!partial_text.empty()) {
      // What the model had said before the interrupt stays in the history, marked as cut short.
      ContentBlock said;
      said.text = utf8_sanitized(std::move(partial_text));
      said.text.resize(utf8_prefix_length(said.text, kMaxReplyBytes));
      auto body =
          KEEL_TRY(encode_assistant_message(AssistantMessageBody{.content = {std::move(said)},
                                                                 .stop_reason = AssistantStopReason::kEnd,
                                                                 .provider_stop_reason = "interrupted"}));
      body["interrupted"] = true;
      nodes.push_back(KEEL_TRY(engine_.threads().append(
          tx, make_node(new_id(), thread_id(), run_.id, NodeKind::kAssistantMessage, std::move(body)))));
    }
    KEEL_TRY(answer_unanswered(tx, nodes, "Interrupted by the user", in_flight_call_id));
    KEEL_TRY(materialize_steers(tx, nodes));  // at a safe leaf: after every call's result
    auto notice = KEEL_TRY(encode_notice(NoticeBody{.text = kInterruptNotice, .for_model = true}));
    nodes.push_back(KEEL_TRY(engine_.threads().append(
        tx, make_node(new_id(), thread_id(), run_.id, NodeKind::kNotice, std::move(notice)))));
    RunUpdate update;
    update.stop_reason = "interrupted";
    update.clear_pending_tool = run_.pending_tool.has_value();
    RunRecord run = KEEL_TRY(engine_.runs().transition_from(tx, run_, RunState::kInterrupted, update));
    return std::make_pair(std::move(nodes), std::move(run));
  });
  end_turn(std::move(written), "interrupted");
}

Result<void> TurnRunner::materialize_steers(Transaction& tx, std::vector<NodeRecord>& out) {
  const RunRecord run = KEEL_TRY(engine_.runs().get(tx, run_.id));
  for (const SteerRecord& steer :
       KEEL_TRY(engine_.runs().pending_steers_up_to(tx, run_.id, run.next_admission_seq - 1))) {
    std::vector<ContentBlock> content = KEEL_TRY(content_from_json(steer.input));
    json body = KEEL_TRY(encode_user_message(
        UserMessageBody{.content = std::move(content), .steered = true, .steer_id = steer.id}));
    if (!steer.attachments.empty()) body["attachments"] = steer.attachments;
    NodeRecord node = KEEL_TRY(engine_.threads().append(
        tx, make_node(new_id(), thread_id(), run_.id, NodeKind::kUserMessage, std::move(body))));
    KEEL_TRY(engine_.runs().mark_materialized(tx, steer.id, node.id));
    out.push_back(std::move(node));
  }
  return {};
}

void TurnRunner::end_turn(Result<std::pair<std::vector<NodeRecord>, RunRecord>> written,
                          const std::string& stop_reason, json extra) {
  if (!written) return report_unpersisted(written.error());
  run_ = written->second;
  unanswered_.clear();
  publish_nodes(written->first);
  publish_run();
  complete_turn(stop_reason, std::move(extra));
}

void TurnRunner::report_unpersisted(const Error& error) {
  stop_admitting();
  // What the refused write held is lost; the turn still ends, with this reason, once its step unwound.
  if (!failed_write_) failed_write_ = error;
}

asio::awaitable<void> drive_turn(std::shared_ptr<TurnRunner> runner) { co_await runner->run(); }

// ---- title generation ----

class TitleTask {
 public:
  TitleTask(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, std::string input)
      : engine_(engine), actor_(std::move(actor)), input_(std::move(input)) {}

  asio::awaitable<void> run() {
    ProviderRequest request;
    request.model = *engine_.options().task_model;
    request.system_prompt =
        "Write a title of at most 8 words for a conversation that starts with the user's message below. "
        "Reply with the title only, no quotes.";
    Message message;
    ContentBlock block;
    block.text = input_;
    message.content.push_back(std::move(block));
    std::vector<Message> messages{std::move(message)};
    request.messages = messages;
    request.max_output_tokens = 32;
    auto inbox = std::make_shared<Inbox>(actor_->strand, engine_.io_lifetime());
    CancellationToken cancel = engine_.shutdown_token();
    CancellationRegistration on_cancel = cancel.on_cancel([to = inbox->sender()] { to.push(Interrupted{}); });
    engine_.deps().task_provider->stream(std::move(request), cancel, std::make_shared<InboxSink>(inbox->sender()));
    std::string title;
    while (true) {
      LoopInput input = co_await inbox->next();
      if (std::holds_alternative<Interrupted>(input)) co_return;
      if (auto* done = std::get_if<StreamDone>(&input)) {
        if (!done->result) co_return;  // best effort: the fallback title stays
        break;
      }
      if (auto* event = std::get_if<ProviderEvent>(&input)) {
        if (auto* text = std::get_if<provider_event::TextDelta>(event)) title += text->text;
      }
    }
    const size_t start = title.find_first_not_of(" \t\r\n\"'");
    const size_t end = title.find_last_not_of(" \t\r\n\"'");
    if (start == std::string::npos) co_return;
    title = title.substr(start, end - start + 1);
    if (title.size() > 120) title.resize(120);
    if (!canonical_json(json(title)) || title.find('\n') != std::string::npos) co_return;  // invalid UTF-8
    auto updated = engine_.write(
        [&](Transaction& tx) { return engine_.threads().set_title(tx, actor_->thread_id, title); });
    if (!updated) co_return;
    engine_.publish(
        "thread.updated", actor_->thread_id,
        {{"threadId", actor_->thread_id}, {"title", updated->title}, {"revision", updated->revision}});
  }

 private:
  EngineCore::Impl& engine_;
  std::shared_ptr<ThreadActor> actor_;
  std::string input_;
};

asio::awaitable<void> drive_title(std::shared_ptr<TitleTask> task) { co_await task->run(); }

}  // namespace

void spawn_turn_runner(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, RunRecord run,
                       CancellationToken cancel, bool continuing,
                       std::shared_ptr<const ToolRegistryGeneration> generation) {
  const std::string turn_id = run.turn_id;
  const std::string run_id = run.id;
  auto runner = std::make_shared<TurnRunner>(engine, actor, std::move(run), std::move(cancel), continuing,
                                             std::move(generation));
  Strand strand = actor->strand;
  asio::co_spawn(
      strand, drive_turn(runner), [&engine, actor, runner, turn_id, run_id](std::exception_ptr failure) {
        runner->flush_events();
        if (failure) {
          // run() ends the turn whatever its step throws; this is an exception thrown while it was ending the
          // turn. Nothing says the end was written, so the thread is stranded like after an unpersisted end.
          std::string what = "unknown exception";
          try {
            std::rethrow_exception(failure);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          const Error error(codes::kInternal,
                            "the turn stopped on an unexpected error while ending: " + what);
          actor->mark_stranded(Error(codes::kTurnUnpersisted,
                                     "turn " + turn_id + " could not record its end (" + error.to_string() +
                                         "); the thread takes no new "
                                         "work until keel restarts and recovers the run"));
          engine.publish("run.updated", actor->thread_id,
                         {{"runId", run_id}, {"persisted", false}, {"error", error_json(error)}});
          engine.publish("turn.complete", actor->thread_id,
                         {{"turnId", turn_id},
                          {"runId", run_id},
                          {"stopReason", "error"},
                          {"error", error_json(error)},
                          {"persisted", false}});
        }
        engine.turn_finished(actor, runner->state());
      });
}

void spawn_title_task(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, std::string first_input) {
  auto task = std::make_shared<TitleTask>(engine, actor, std::move(first_input));
  asio::co_spawn(actor->strand, drive_title(task),
                 [&engine, task](std::exception_ptr) { engine.leave_running(); });
}

}  // namespace keel
