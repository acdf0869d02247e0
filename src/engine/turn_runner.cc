#include "engine/turn_runner.h"

#include <boost/asio/co_spawn.hpp>
#include <unordered_set>
#include <utility>

#include "engine/engine_errors.h"
#include "engine/run_environment.h"
#include "store/node_body.h"

namespace keel {

namespace asio = boost::asio;

namespace {

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

}  // namespace

std::shared_ptr<const ToolRegistryGeneration> TurnRunner::bind_tools() {
  const ModelSettings& model = turn_.model;
  if (!model.tool_use) return ToolRegistry::empty_generation();  // no schema is sent at all
  std::shared_ptr<const ToolRegistryGeneration> generation = turn_.generation;
  if (turn_.snapshot_tools) {
    // The run's catalog, from the current generation (recovery verified that the two agree).
    std::unordered_set<std::string> names(turn_.snapshot_tools->begin(), turn_.snapshot_tools->end());
    return generation->filtered([&](const ToolDescriptor& d) { return names.contains(d.name); });
  }
  if (!model.vision) {
    generation = generation->filtered([](const ToolDescriptor& d) { return !d.hidden_without_vision(); });
  }
  return generation;
}

Result<void> TurnRunner::load_environment() {
  EngineCore::Impl& engine = turn_.engine;
  const CatalogModel* fallback = engine.models().default_model();
  if (fallback == nullptr) return fail(codes::kModelUnknown, "the engine has no model to run turns with");
  turn_.model = fallback->settings;
  turn_.provider = fallback->provider;
  // One generation, taken atomically, for the check and for the binding (spec §4): a tool replaced in
  // between cannot slip into a run that was verified against its predecessor.
  if (!turn_.generation) turn_.generation = engine.deps().tools->snapshot();
  if (!turn_.run.snapshot_id && !turn_.continuing) return {};
  auto tx = KEEL_TRY(engine.store().begin(TxMode::kRead));
  // A live continuation (an approval or an answer given, a timer fired, while the engine ran) starts from
  // the held wait's ids only: its snapshot is the stored run's, so it goes on with the run's own model and is
  // verified like any other, not with the default model.
  if (turn_.continuing && !turn_.run.snapshot_id) {
    turn_.run.snapshot_id = KEEL_TRY(engine.runs().get(*tx, turn_.run.id)).snapshot_id;
  }
  if (!turn_.run.snapshot_id) return tx->commit();
  EnvironmentSnapshotRecord snapshot = KEEL_TRY(engine.snapshots().get(*tx, *turn_.run.snapshot_id));
  KEEL_TRY(tx->commit());
  // Every runner verifies, not only a recovered one: a resumed run (run.resume) continues a run that
  // started under an earlier configuration just as a recovered one does, and for a run admitted a moment
  // ago the check costs one digest of a small body.
  const CatalogModel* model = KEEL_TRY(model_of_run(snapshot, engine.models()));
  KEEL_TRY(verify_environment(snapshot, model->transport, *turn_.generation, engine.deps().skills));
  RunEnvironment env = KEEL_TRY(environment_of(snapshot));
  turn_.model = std::move(env.model);
  turn_.provider = model->provider;
  turn_.snapshot_tools = std::move(env.tool_names);
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
    co_await ending_.end_after_failure(*thrown);
  } else if (turn_.failed_write) {
    Error refused(turn_.failed_write->code(),
                  "keel could not record the turn's progress: " + turn_.failed_write->message());
    co_await ending_.end_after_failure(std::move(refused));
  }
  // The last events (turn.complete among them) go out from the completion handler, in the same strand step
  // that frees the thread: a client that submits the moment it sees turn.complete must find it free.
}

asio::awaitable<void> TurnRunner::run_turn() {
  if (auto loaded = load_environment(); !loaded) {
    turn_.tools = ToolRegistry::empty_generation();
    if (turn_.continuing) {  // the open calls get results, so the history stays valid for a new turn
      auto tx = turn_.engine.store().begin(TxMode::kRead);
      if (tx) {
        if (auto calls = waits_.calls_without_results(**tx)) turn_.unanswered = *calls;
        (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
      }
    }
    co_await ending_.end_turn(Ending::failed(loaded.error()));
    co_return;
  }
  turn_.tools = bind_tools();
  turn_.tools_off = turn_.run.failure_streak >= kFailuresBeforeToolsOff;
  if (turn_.continuing) {
    const bool goes_on = co_await waits_.continue_wait();
    if (!goes_on) co_return;
  }
  // (Not `while (co_await step())`: g++ 12 miscompiles co_await in a loop condition.)
  for (;;) {
    const bool more = co_await step();
    if (!more) break;
  }
}

asio::awaitable<bool> TurnRunner::step() {
  if (turn_.cancel.is_cancelled()) {
    co_await ending_.end_turn(Ending::interrupted());
    co_return false;
  }
  // §1 token budget: checked before each request, so a paused run resumes with a fresh request.
  const TokenUsage used = usage_from_json(turn_.run.usage);
  if (turn_.run.budget_tokens && used.total() >= *turn_.run.budget_tokens) {
    co_await ending_.end_turn(Ending::budget_pause(used));
    co_return false;
  }
  const bool cut = co_await take_steers();
  if (!cut) co_return false;
  std::optional<ProviderRequest> request = co_await model_.prepare_request();
  if (!request) co_return false;
  const std::string assistant_id = turn_.new_id();
  std::optional<AssembledResponse> reply = co_await model_.stream_reply(std::move(*request), assistant_id);
  if (!reply) co_return false;
  co_return co_await settle_reply(std::move(*reply), assistant_id, used);
}

bool TurnRunner::has_pending_steers() {
  auto tx = turn_.engine.store().begin(TxMode::kRead);
  if (!tx) return true;  // let the write report the store's trouble
  auto pending = turn_.engine.runs().pending_steers(**tx, turn_.run.id);
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
  return !pending || !pending->empty();
}

asio::awaitable<bool> TurnRunner::take_steers() {
  // Spec §3's cutoff: the steers admitted so far go onto the leaf, in admission order, exactly once per
  // request and before its context is built; a steer admitted later waits for the next request.
  co_await turn_.wait_for_admissions(turn_.gate().started());  // the cutoff's one synchronous point
  if (!turn_.gate().take_admitted() || !has_pending_steers()) co_return true;
  Result<Events> taken = journal_.take_steers();
  co_return turn_.publish_committed(std::move(taken));
}

asio::awaitable<bool> TurnRunner::settle_reply(AssembledResponse response, std::string assistant_id,
                                               TokenUsage used) {
  std::vector<PlannedCall> calls = calls_.plan(response);
  // With tools off (the breaker), this reply is the last whatever it asks for.
  const bool last_reply = calls.empty() || turn_.tools_off;
  // Spec §3, the turn-end race: the reply would end the turn. Stop admitting, then wait for the
  // admissions already initiated; if steers were admitted since the last cutoff, the turn makes one more
  // request instead (and admits again). Whether a steer is admissible is decided on this strand, so none
  // can slip in between this decision and the commit below.
  if (last_reply) {
    // The reply would end the turn and steers are still admitted: a test holds the turn here to send a
    // steer whose admission is decided only after the stop below.
    std::string point = "turn.steers.before_close";
    co_await turn_.pass_fail_point(std::move(point));
    co_await turn_.wait_for_admissions(turn_.gate().stop());
  }
  // Whatever the reply's stop reason (end, max_tokens, content_filter): a steer admitted meanwhile is
  // answered by one more request (spec §3), not left to the history.
  const bool final = last_reply && !turn_.gate().admitted_since_cutoff();
  if (last_reply && !final) turn_.gate().reopen();
  const bool runs_tools = !calls.empty() && !turn_.tools_off;

  TurnJournal::Reply commit{.assistant_id = assistant_id,
                            .body = {},
                            .calls = calls,
                            .step_usage = response.usage,
                            .total = add(used, response.usage),
                            .provider_stop_reason = response.provider_stop_reason};
  // Tools are off (the breaker) and the reply that was to be the last still asks for tools: its calls get
  // "not run" results and the turn fails with turn.tools_disabled ("tool_use" is not an ending).
  if (final && turn_.tools_off && !calls.empty()) {
    commit.tools_refused =
        Error(codes::kTurnToolsDisabled,
              "tools were disabled after " + std::to_string(turn_.run.failure_streak) +
                  " failed tool calls in a row, and the model's final reply asked for " +
                  std::to_string(calls.size()) + " tool call(s) instead of answering; none was run");
  }
  // The first call is decided now, so that when it must be recorded as dispatched before it runs, that
  // record commits with the message that made the call: one sync fewer for a write.
  std::optional<CallDecision> first_decision;
  if (runs_tools && !final) first_decision = calls_.decide(calls.front());
  const bool dispatch_first = first_decision && first_decision->needs_dispatch_record();
  if (dispatch_first) commit.dispatch = TurnJournal::dispatch_record(calls.front());
  if (final) commit.stop_reason = std::string(to_string(response.stop_reason));
  commit.next = commit.tools_refused ? RunState::kFailed
                : final              ? RunState::kCompleted
                : runs_tools         ? RunState::kExecutingTool
                                     : RunState::kStreamingModel;
  auto encoded =
      encode_assistant_message(AssistantMessageBody{.content = response.content,
                                                    .stop_reason = assistant_reason(response.stop_reason),
                                                    .provider_stop_reason = response.provider_stop_reason,
                                                    .usage = usage_json(response.usage)});
  if (!encoded) {
    co_await ending_.end_turn(Ending::failed(encoded.error()));
    co_return false;
  }
  commit.body = std::move(*encoded);
  Result<Events> written = journal_.commit_reply(commit);
  if (!turn_.publish_committed(std::move(written))) co_return false;
  if (commit.tools_refused || final) {
    events::TurnEnd end{
        .turn_id = turn_.run.turn_id,
        .run_id = turn_.run.id,
        .stop_reason = commit.tools_refused ? "error" : std::string(to_string(response.stop_reason)),
        .provider_stop_reason = response.provider_stop_reason,
        .error = commit.tools_refused};
    // max_tokens and content_filter: the UI says the reply may be incomplete.
    end.may_be_incomplete = !commit.tools_refused && (response.stop_reason == StopReason::kMaxTokens ||
                                                      response.stop_reason == StopReason::kContentFilter);
    // The turn is over (its end is written, steers are refused and go to the queue) and turn.complete is
    // not out yet: a test holds the turn here to send a steer that comes too late.
    std::string point = "turn.complete.before";
    co_await turn_.pass_fail_point(std::move(point));
    turn_.publish(events::turn_complete(end));
    co_return false;
  }
  if (!runs_tools) co_return true;  // steers wait: the next request reads them
  for (size_t i = 0; i < calls.size(); ++i) {
    const bool more_after = i + 1 < calls.size();
    // The argument is built in a statement of its own: g++ 12 destroys a conditional-expression temporary
    // passed to a coroutine twice.
    std::optional<CallDecision> decided;
    if (i == 0) decided = first_decision;
    const bool ran =
        co_await waits_.run_call(calls[i], more_after, std::move(decided), i == 0 && dispatch_first);
    if (!ran) co_return false;
  }
  co_return true;
}

namespace {

asio::awaitable<void> drive_turn(std::shared_ptr<TurnRunner> runner) { co_await runner->run(); }

}  // namespace

void spawn_turn_runner(EngineCore::Impl& engine, std::shared_ptr<ThreadActor> actor, RunRecord run,
                       CancellationToken cancel, bool continuing,
                       std::shared_ptr<const ToolRegistryGeneration> generation) {
  auto runner = std::make_shared<TurnRunner>(engine, actor, std::move(run), std::move(cancel), continuing,
                                             std::move(generation));
  Strand strand = actor->strand;
  asio::co_spawn(strand, drive_turn(runner), [&engine, actor, runner](std::exception_ptr failure) {
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
      const Error error(codes::kInternal, "the turn stopped on an unexpected error while ending: " + what);
      const RunRecord& last = runner->last_run();
      actor->mark_stranded(Error(codes::kTurnUnpersisted,
                                 "turn " + last.turn_id + " could not record its end (" + error.to_string() +
                                     "); the thread takes no new "
                                     "work until keel restarts and recovers the run"));
      engine.publish_event(actor->thread_id, events::run_unpersisted(last, error));
      engine.publish_event(actor->thread_id, events::turn_complete({.turn_id = last.turn_id,
                                                                    .run_id = last.id,
                                                                    .stop_reason = "error",
                                                                    .error = error,
                                                                    .unpersisted = true}));
    }
    engine.turn_finished(actor, runner->last_run().state);
  });
}

}  // namespace keel
