#include "engine/turn.h"

#include <algorithm>

#include "engine/async_inbox.h"

namespace keel {

using nlohmann::json;

namespace {
// Events a runner may hold back while its input keeps coming (see flush_before_waiting).
constexpr size_t kMaxEventsHeldBack = 64;
}  // namespace

std::string shown_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
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

json usage_json(const TokenUsage& u) { return events::usage_payload(u); }

TokenUsage usage_from_json(const json& j) {
  TokenUsage u;
  if (!j.is_object()) return u;
  u.input_tokens = j.value("inputTokens", int64_t{0});
  u.output_tokens = j.value("outputTokens", int64_t{0});
  u.cached_input_tokens = j.value("cachedInputTokens", int64_t{0});
  u.reasoning_tokens = j.value("reasoningTokens", int64_t{0});
  return u;
}

void Turn::flush_before_waiting(bool input_queued) {
  if (!input_queued || outbox.size() >= kMaxEventsHeldBack) flush_events();
}

boost::asio::awaitable<void> Turn::wait_for_admissions(uint64_t ticket) {
  for (;;) {
    if (actor->gate().answered(ticket)) break;
    flush_events();
    std::shared_ptr<AsyncInbox<uint64_t>> reports = actor->gate().reports();
    co_await reports->next();
  }
}

boost::asio::awaitable<void> Turn::pass_fail_point(std::string name) {
  FailPoints* points = engine.deps().fail_points;
  if (points == nullptr) co_return;
  if (!points->holds_next(name)) {
    (void)points->hit(name);
    co_return;
  }
  flush_events();
  auto released = std::make_shared<AsyncInbox<bool>>(actor->strand, engine.io_lifetime());
  // The worker holds only what it owns: the FailPoints outlives the engine (EngineDeps).
  engine.run_blocking([points, name, sender = released->sender()] {
    (void)points->hit(name);
    sender.push(true);
  });
  (void)co_await released->next();
}

void Turn::answered(const std::string& tool_call_id) {
  if (in_flight_call == tool_call_id) in_flight_call.reset();
  std::erase_if(unanswered, [&](const PlannedCall& call) { return call.tool_call_id == tool_call_id; });
}

std::vector<std::string> Turn::count_result(bool failed, bool refused) {
  std::vector<std::string> notices;
  if (refused) return notices;  // user and policy refusals neither count nor reset (spec §1)
  if (!failed) {
    run.failure_streak = 0;
    return notices;
  }
  run.failure_streak += 1;
  if (run.failure_streak == kFailuresBeforeReminder) notices.push_back(kReminderText);
  if (run.failure_streak >= kFailuresBeforeToolsOff && !tools_off) {
    tools_off = true;
    notices.push_back(kToolsOffText);
  }
  return notices;
}

bool Turn::publish_committed(Result<std::vector<events::Event>> committed) {
  if (!committed) {
    report_unpersisted(committed.error());
    return false;
  }
  publish(std::move(*committed));
  return true;
}

void Turn::report_unpersisted(const Error& error) {
  actor->gate().stop();
  // What the refused write held is lost; the turn still ends, with this reason, once its step unwound.
  if (!failed_write) failed_write = error;
}

}  // namespace keel
