#include "engine/waits.h"

#include <boost/asio/post.hpp>

#include "engine/engine_errors.h"
#include "engine/wait_records.h"
#include "store/receipts.h"
#include "util/canonical_json.h"

namespace keel {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr size_t kMaxReasonBytes = 4000;

Result<std::string> required_string(const json& params, const char* key) {
  const auto it = params.find(key);
  if (it == params.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return fail(codes::kInvalidArgument, std::string("'") + key + "' must be a non-empty string");
  }
  return it->get<std::string>();
}

// {decision, reason?} of an approval.response, validated.
Result<json> approval_payload(const json& params) {
  const std::string decision = KEEL_TRY(required_string(params, "decision"));
  if (decision != "accept" && decision != "acceptForSite" && decision != "decline") {
    return fail(codes::kInvalidArgument,
                "'decision' must be accept, acceptForSite or decline, not '" + decision + "'");
  }
  json payload = {{"decision", decision}};
  // acceptForSite's lifetime: how long the remembered decision holds (docs/policy.md).
  if (const auto remember = params.find("remember"); remember != params.end() && !remember->is_null()) {
    const bool known = remember->is_string() &&
                       (*remember == "turn" || *remember == "session" || *remember == "untilRevoked");
    if (!known || decision != "acceptForSite") {
      return fail(codes::kInvalidArgument,
                  "'remember' goes with acceptForSite and is turn, session or untilRevoked");
    }
    payload["remember"] = *remember;
  }
  if (const auto reason = params.find("reason"); reason != params.end() && !reason->is_null()) {
    if (!reason->is_string()) return fail(codes::kInvalidArgument, "'reason' must be a string");
    const std::string& text = reason->get_ref<const std::string&>();
    if (text.size() > kMaxReasonBytes) {
      return fail(codes::kInvalidArgument,
                  "'reason' is longer than " + std::to_string(kMaxReasonBytes) + " bytes");
    }
    KEEL_TRY(canonical_json(*reason));  // valid UTF-8
    if (!text.empty()) payload["reason"] = text;
  }
  return payload;
}

bool offered(const ApprovalRecord& approval, const std::string& decision) {
  const json offers = approval.request.value("offers", json::array());
  for (const json& offer : offers) {
    if (offer.is_string() && offer.get<std::string>() == decision) return true;
  }
  return false;
}

}  // namespace

void Waits::respond_approval(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  const std::string& thread_id = actor->thread_id;
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return c_.replies.reject(op, thread_id, context.error());
  std::optional<json> rule;
  std::optional<NodeRecord> audit;
  std::optional<RunRecord> run_after;
  std::string approval_id;
  auto outcome = run_command(c_.writer.store(), c_.clock, *context, [&](Transaction& tx) -> Result<json> {
    rule.reset();
    audit.reset();
    run_after.reset();
    approval_id = KEEL_TRY(required_string(op.params, "approvalId"));
    const json payload = KEEL_TRY(approval_payload(op.params));
    const std::string decision = payload["decision"].get<std::string>();
    ApprovalRecord approval = KEEL_TRY(c_.interactions.get_approval(tx, approval_id));
    RunRecord run = KEEL_TRY(c_.runs.get(tx, approval.run_id));
    if (run.thread_id != thread_id) {
      return fail(codes::kApprovalThreadMismatch,
                  "approval " + approval_id + " belongs to another thread; nothing was decided");
    }
    json result = {{"approvalId", approval_id}, {"runId", run.id}, {"decision", decision}};
    if (approval.state == "decided") {
      // Spec §5.1: the first decision stands. The same one again is acknowledged; another is refused.
      if (approval.decision == payload) {
        result["alreadySettled"] = true;
        return result;
      }
      return fail(codes::kInvalidCommand,
                  "approval " + approval_id + " was already decided (" +
                      approval.decision.value_or(json::object()).value("decision", "") +
                      "); a different decision is refused");
    }
    const json pending = run.pending_tool.value_or(json::object());
    if (run.state != RunState::kWaitingApproval || pending.value("approvalId", "") != approval_id) {
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
    if (payload.contains("reason")) body["reason"] = payload["reason"];
    NewNode node;
    node.id = c_.ids.next_id();
    node.thread_id = thread_id;
    node.run_id = run.id;
    node.kind = NodeKind::kApprovalDecision;
    node.body = std::move(body);
    audit = KEEL_TRY(c_.threads.append(tx, std::move(node)));
    run_after = KEEL_TRY(c_.runs.transition_from(tx, run, RunState::kWaitingApproval));
    if (decision == "acceptForSite") {
      const ToolDescriptor descriptor = approved_descriptor(approval.request);
      const json arguments = approval.request.value("arguments", json::object());
      GateRequest request{thread_id,
                          approval.tool_call_id,
                          &descriptor,
                          &arguments,
                          target_from_json(approval.request.value("target", json::object())),
                          run.turn_id};
      const json offer = approval.request.value("remember", json(nullptr));
      rule = KEEL_TRY(
          c_.gatekeeper.write_site_rule(tx, request, offer, payload.value("remember", std::string())));
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
  c_.replies.publish("approval.resolved", thread_id, outcome->outcome.result);
  if (actor->holds(approval_id)) continue_held(actor);
}

void Waits::respond_interaction(const std::shared_ptr<ThreadActor>& actor, const Op& op) {
  const std::string& thread_id = actor->thread_id;
  auto context = make_command_context(op.client_id, op.submission_id, op.method, op.params);
  if (!context) return c_.replies.reject(op, thread_id, context.error());
  std::optional<RunRecord> run_after;
  std::string interaction_id;
  auto outcome = run_command(c_.writer.store(), c_.clock, *context, [&](Transaction& tx) -> Result<json> {
    run_after.reset();
    interaction_id = KEEL_TRY(required_string(op.params, "interactionId"));
    const auto it = op.params.find("response");
    if (it == op.params.end()) return fail(codes::kInvalidArgument, "'response' is missing");
    const json& response = *it;
    KEEL_TRY(canonical_json(response));  // valid UTF-8 throughout
    InteractionRecord interaction = KEEL_TRY(c_.interactions.get_interaction(tx, interaction_id));
    RunRecord run = KEEL_TRY(c_.runs.get(tx, interaction.run_id));
    if (run.thread_id != thread_id) {
      return fail(codes::kInteractionThreadMismatch,
                  "interaction " + interaction_id + " belongs to another thread; nothing was answered");
    }
    json result = {{"interactionId", interaction_id}, {"runId", run.id}};
    if (interaction.claim_state != "waiting") {
      if (interaction.response == response) {
        result["alreadySettled"] = true;
        return result;
      }
      return fail(codes::kInvalidCommand,
                  "interaction " + interaction_id + " was already answered; a different answer is refused");
    }
    const json pending = run.pending_tool.value_or(json::object());
    if (run.state != RunState::kWaitingInteraction || pending.value("interactionId", "") != interaction_id) {
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
    if (interaction.kind == "timer") {
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
  c_.replies.publish("interaction.resolved", thread_id, outcome->outcome.result);
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
  c_.replies.publish("interaction.resolved", actor->thread_id,
                     {{"interactionId", interaction_id}, {"runId", fired->id}, {"fired", true}});
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
  if (activity.wait_kind == "approval" && !settled) {
    auto approval = c_.interactions.get_approval(**tx, activity.wait_id);
    settled = !approval || approval->state == "decided";
  } else if (!settled) {
    auto interaction = c_.interactions.get_interaction(**tx, activity.wait_id);
    settled = !interaction || interaction->claim_state != "waiting";
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
        json event = approval_event(approval, run);
        event["resent"] = true;
        c_.replies.publish("approval.request", run.thread_id, std::move(event));
      }
    }
    if (auto waiting = c_.interactions.waiting_for_run(**tx, run.id)) {
      for (const InteractionRecord& interaction : *waiting) {
        json event = interaction_event(interaction, run);
        event["resent"] = true;
        c_.replies.publish("interaction.request", run.thread_id, std::move(event));
      }
    }
  }
  (void)(*tx)->commit();  // a read: its commit only ends the snapshot, what was read stands
}

}  // namespace keel
