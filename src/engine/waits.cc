#include "engine/waits.h"

#include <boost/asio/post.hpp>

#include "engine/engine_errors.h"
#include "engine/wait_records.h"
#include "store/receipts.h"

namespace keel {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

bool offered(const ApprovalRecord& approval, const std::string& decision) {
  const json offers = approval.request.value("offers", json::array());
  for (const json& offer : offers) {
    if (offer.is_string() && offer.get<std::string>() == decision) return true;
  }
  return false;
}

}  // namespace

void Waits::respond_approval(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                             Result<protocol::ApprovalResponseParams> params) {
  const std::string& thread_id = actor->thread_id;
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return c_.replies.reject(op, thread_id, context.error());
  std::optional<json> rule;
  std::optional<NodeRecord> audit;
  std::optional<RunRecord> run_after;
  std::string approval_id;
  std::string decision;
  auto outcome = run_command(c_.writer.store(), c_.clock, *context, [&](Transaction& tx) -> Result<json> {
    rule.reset();
    audit.reset();
    run_after.reset();
    if (!params) return std::unexpected(params.error());
    approval_id = params->approval_id;
    // The decision as it is stored and compared (ApprovalResponseParams::decode checked its values).
    ApprovalAnswer payload;
    payload.choice = KEEL_TRY(parse_approval_choice(params->decision));
    payload.remember = params->remember;
    payload.reason = params->reason;
    decision = std::string(to_string(payload.choice));
    ApprovalRecord approval = KEEL_TRY(c_.interactions.get_approval(tx, approval_id));
    RunRecord run = KEEL_TRY(c_.runs.get(tx, approval.run_id));
    if (run.thread_id != thread_id) {
      return fail(codes::kApprovalThreadMismatch,
                  "approval " + approval_id + " belongs to another thread; nothing was decided");
    }
    json result = {{"approvalId", approval_id}, {"runId", run.id}, {"decision", decision}};
    if (approval.state == ApprovalState::kDecided) {
      // Spec §5.1: the first decision stands. The same one again is acknowledged; another is refused.
      if (approval.decision == payload) {
        result["alreadySettled"] = true;
        return result;
      }
      return fail(codes::kInvalidCommand,
                  "approval " + approval_id + " was already decided (" +
                      (approval.decision ? std::string(to_string(approval.decision->choice)) : "") +
                      "); a different decision is refused");
    }
    if (run.state != RunState::kWaitingApproval || !run.pending_tool ||
        !run.pending_tool->waits_for(WaitKind::kApproval) || run.pending_tool->wait->id != approval_id) {
      return fail(codes::kApprovalExpired, "approval " + approval_id + " no longer applies: its run is " +
                                               std::string(to_string(run.state)));
    }
    if (!offered(approval, decision)) {
      return fail(codes::kApprovalNotOffered, "approval " + approval_id + " does not offer '" + decision +
                                                  "'; it offers " +
                                                  approval.request.value("offers", json::array()).dump());
    }
    KEEL_TRY(c_.interactions.decide(tx, approval_id, payload));
    json body = {{"approvalId", approval_id},
                 {"toolCallId", approval.tool_call_id},
                 {"decision", decision},
                 {"clientId", op.client_id}};
    if (payload.reason) body["reason"] = *payload.reason;
    NewNode node;
    node.id = c_.ids.next_id();
    node.thread_id = thread_id;
    node.run_id = run.id;
    node.kind = NodeKind::kApprovalDecision;
    node.body = std::move(body);
    audit = KEEL_TRY(c_.threads.append(tx, std::move(node)));
    run_after = KEEL_TRY(c_.runs.transition_from(tx, run, RunState::kWaitingApproval));
    if (payload.choice == ApprovalChoice::kAcceptForSite) {
      const ToolDescriptor descriptor = approved_descriptor(approval.request);
      const json arguments = approval.request.value("arguments", json::object());
      GateRequest request{thread_id,
                          approval.tool_call_id,
                          &descriptor,
                          &arguments,
                          target_from_json(approval.request.value("target", json::object())),
                          run.turn_id};
      const json offer = approval.request.value("remember", json(nullptr));
      rule = KEEL_TRY(c_.gatekeeper.write_site_rule(tx, request, offer, payload.remember.value_or("")));
    }
    result["nodeId"] = audit->id;
    return result;
  });
  if (!outcome) return c_.replies.reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return c_.replies.reject(op, thread_id, *outcome->outcome.rejection);
  c_.replies.ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (outcome->replayed || !audit) return;
  // After the commit (spec §6.1): the site rule takes effect, then the run continues.
  if (rule) c_.gatekeeper.install(*rule);
  actor->context().invalidate();
  c_.replies.publish_event(thread_id, events::item_complete(*audit, run_after->turn_id));
  c_.replies.publish_event(thread_id, events::run_updated(*run_after));
  c_.replies.publish_event(thread_id,
                           events::approval_resolved(approval_id, run_after->id, decision, audit->id));
  if (actor->holds(approval_id)) continue_held(actor);
}

void Waits::respond_interaction(const std::shared_ptr<ThreadActor>& actor, const Op& op,
                                Result<protocol::InteractionResponseParams> params) {
  const std::string& thread_id = actor->thread_id;
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return c_.replies.reject(op, thread_id, context.error());
  std::optional<RunRecord> run_after;
  std::string interaction_id;
  auto outcome = run_command(c_.writer.store(), c_.clock, *context, [&](Transaction& tx) -> Result<json> {
    run_after.reset();
    if (!params) return std::unexpected(params.error());
    interaction_id = params->interaction_id;
    const json& response = params->response;
    InteractionRecord interaction = KEEL_TRY(c_.interactions.get_interaction(tx, interaction_id));
    RunRecord run = KEEL_TRY(c_.runs.get(tx, interaction.run_id));
    if (run.thread_id != thread_id) {
      return fail(codes::kInteractionThreadMismatch,
                  "interaction " + interaction_id + " belongs to another thread; nothing was answered");
    }
    json result = {{"interactionId", interaction_id}, {"runId", run.id}};
    if (interaction.claim_state != ClaimState::kWaiting) {
      if (interaction.response == response) {
        result["alreadySettled"] = true;
        return result;
      }
      return fail(codes::kInvalidCommand,
                  "interaction " + interaction_id + " was already answered; a different answer is refused");
    }
    if (run.state != RunState::kWaitingInteraction || !run.pending_tool ||
        !run.pending_tool->waits_for(WaitKind::kInteraction) ||
        run.pending_tool->wait->id != interaction_id) {
      return fail(codes::kInteractionExpired, "interaction " + interaction_id +
                                                  " no longer applies: its run is " +
                                                  std::string(to_string(run.state)));
    }
    const json prompt = interaction.request.value("prompt", json::object());
    // The tool of the generation the waiting run is bound to (spec §4), not the live registry's: a tool
    // replaced meanwhile must not judge an answer to a question its predecessor asked.
    const RegisteredTool* tool = nullptr;
    if (actor->holds(interaction_id) && actor->held()->tools) {
      tool = actor->held()->tools->find(interaction.request.value("toolName", ""));
    }
    if (interaction.kind == InteractionKind::kTimer) {
      return fail(codes::kInvalidArgument,
                  "interaction " + interaction_id + " is a timer; it fires by itself");
    }
    if (tool != nullptr) {
      KEEL_TRY(tool->implementation->check_response(prompt, response));
    } else if (!response.is_object()) {
      return fail(codes::kInvalidArgument, "the response must be a JSON object");
    }
    KEEL_TRY(c_.interactions.answer(tx, interaction_id, response));
    run_after = KEEL_TRY(c_.runs.transition_from(tx, run, RunState::kWaitingInteraction));
    return result;
  });
  if (!outcome) return c_.replies.reject(op, thread_id, outcome.error());
  if (!outcome->outcome.accepted) return c_.replies.reject(op, thread_id, *outcome->outcome.rejection);
  c_.replies.ack(op, thread_id, outcome->outcome.result, outcome->replayed);
  if (outcome->replayed || !run_after) return;
  c_.replies.publish_event(thread_id, events::run_updated(*run_after));
  c_.replies.publish_event(thread_id, events::interaction_resolved(interaction_id, run_after->id));
  if (actor->holds(interaction_id)) continue_held(actor);
}

void Waits::arm_timer(const std::shared_ptr<ThreadActor>& actor, const InteractionRecord& timer) {
  if (!actor->holds(timer.id) || !timer.due_at) return;
  const int64_t delay = std::max<int64_t>(0, *timer.due_at - c_.clock.now_unix_ms());
  const std::string id = timer.id;
  actor->set_wait_timer(c_.scheduler.schedule_after(std::chrono::milliseconds(delay), [this, actor, id] {
    asio::post(actor->strand, [this, actor, id] { fire_timer(actor, id); });
  }));
}

void Waits::fire_timer(const std::shared_ptr<ThreadActor>& actor, const std::string& interaction_id) {
  if (!actor->holds(interaction_id) || c_.launcher.stopping()) return;
  auto fired = c_.writer.write([&](Transaction& tx) -> Result<RunRecord> {
    InteractionRecord timer = KEEL_TRY(c_.interactions.get_interaction(tx, interaction_id));
    RunRecord run = KEEL_TRY(c_.runs.get(tx, timer.run_id));
    KEEL_TRY(c_.interactions.answer(tx, interaction_id, {{"firedAtMs", c_.clock.now_unix_ms()}}));
    return c_.runs.transition_from(tx, run, RunState::kWaitingInteraction);
  });
  if (!fired) {
    // The timer stays waiting in the store; try again shortly rather than lose it.
    // The run keeps its last persisted state, which the event carries (protocol/events.h).
    if (auto tx = c_.writer.store().begin(TxMode::kRead)) {
      if (auto run = c_.runs.get(**tx, actor->held()->run_id)) {
        c_.replies.publish_event(actor->thread_id, events::run_unpersisted(*run, fired.error()));
      }
    }
    actor->set_wait_timer(c_.scheduler.schedule_after(std::chrono::seconds(1), [this, actor, interaction_id] {
      asio::post(actor->strand, [this, actor, interaction_id] { fire_timer(actor, interaction_id); });
    }));
    return;
  }
  c_.replies.publish_event(actor->thread_id, events::run_updated(*fired));
  c_.replies.publish_event(actor->thread_id,
                           events::interaction_resolved(interaction_id, fired->id, /*fired=*/true));
  continue_held(actor);
}

void Waits::continue_held(const std::shared_ptr<ThreadActor>& actor) {
  std::optional<HeldWait> held = actor->release();  // and with it an armed timer
  if (!held) return;
  RunRecord run;
  run.id = held->run_id;
  run.thread_id = actor->thread_id;
  run.turn_id = actor->turn()->turn_id;
  run.turn_kind = actor->turn()->turn_kind;
  std::shared_ptr<const ToolRegistryGeneration> generation = std::move(held->tools);
  held.reset();
  CancellationToken cancel = actor->turn()->cancel.token();
  if (c_.launcher.stopping()) return;  // the wait stays in the store; the next start restores it
  c_.launcher.continue_turn(actor, std::move(run), std::move(cancel), std::move(generation));
}

void Waits::restore_wait(const std::shared_ptr<ThreadActor>& actor, const RunRecord& run) {
  if (actor->turn()) return;
  // Steers are admitted while the wait holds (begin_turn opens the gate); the continuation takes them.
  (void)actor->begin_turn(run);
  const ThreadActivity activity = activity_after_recovery(run);
  HeldWait held;
  held.run_id = run.id;
  held.kind = activity.wait_kind;
  held.id = activity.wait_id;
  // Taken once: the answer's check and the continuation (which verifies the run's environment) use it.
  held.tools = c_.tools.snapshot();
  actor->hold(std::move(held));
  // A wait settled before the process died continues now; a timer is armed again (at once when it fell
  // due meanwhile); an open question waits for its answer.
  auto tx = c_.writer.store().begin(TxMode::kRead);
  if (!tx) return;
  bool settled = activity.wait_id.empty();
  std::optional<InteractionRecord> timer;
  if (activity.wait_kind == WaitKind::kApproval && !settled) {
    auto approval = c_.interactions.get_approval(**tx, activity.wait_id);
    settled = !approval || approval->state == ApprovalState::kDecided;
  } else if (!settled) {
    auto interaction = c_.interactions.get_interaction(**tx, activity.wait_id);
    settled = !interaction || interaction->claim_state != ClaimState::kWaiting;
    if (interaction && !settled && interaction->due_at) timer = *interaction;
  }
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
  if (settled) return continue_held(actor);
  if (timer) arm_timer(actor, *timer);
}

void Waits::resend_waits() {
  auto tx = c_.writer.store().begin(TxMode::kRead);
  if (!tx) return;
  auto runs = c_.runs.list_in_states(**tx, {RunState::kWaitingApproval, RunState::kWaitingInteraction});
  if (!runs) return;
  for (const RunRecord& run : *runs) {
    if (auto approvals = c_.interactions.pending_approvals_for_run(**tx, run.id)) {
      for (const ApprovalRecord& approval : *approvals) {
        c_.replies.publish_event(run.thread_id, events::approval_request(approval, run, /*resent=*/true));
      }
    }
    if (auto waiting = c_.interactions.waiting_for_run(**tx, run.id)) {
      for (const InteractionRecord& interaction : *waiting) {
        c_.replies.publish_event(run.thread_id,
                                 events::interaction_request(interaction, run, /*resent=*/true));
      }
    }
  }
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
}

}  // namespace keel
