// cli/turn_follower.h — follows one turn of a thread to its end for the line-oriented front ends (keel run,
// keel resume, keel demo): renders its events, answers approval and interaction requests through a Decider,
// and forwards an interrupt the person asked for.
//
// Events of other threads are ignored; approval and interaction requests of the followed thread are
// answered even when they belong to a run the follower did not start (a request re-sent after a restart).
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/engine_client.h"
#include "cli/event_renderer.h"
#include "keel/error.h"

namespace keel::cli {

// How a front end answers what the engine asks of the person.
class Decider {
 public:
  virtual ~Decider() = default;
  // An approval.request's payload -> approval.response params {decision, reason?}.
  virtual nlohmann::json decide_approval(const nlohmann::json& request) = 0;
  // An ask_user interaction.request's payload -> interaction.response's `response` ({answer}).
  virtual nlohmann::json answer_question(const nlohmann::json& request) = 0;
};

enum class ApprovalPolicy { kAsk, kAccept, kDecline };
std::optional<ApprovalPolicy> parse_approval_policy(std::string_view name);

// Asks on the terminal (`in` / `out`) under kAsk; answers by itself under kAccept and kDecline. Without a
// terminal to ask on, kAsk declines (saying so) and questions get an empty answer.
class TerminalDecider final : public Decider {
 public:
  TerminalDecider(ApprovalPolicy policy, std::istream& in, std::ostream& out, bool interactive)
      : policy_(policy), in_(in), out_(out), interactive_(interactive) {}
  nlohmann::json decide_approval(const nlohmann::json& request) override;
  nlohmann::json answer_question(const nlohmann::json& request) override;

 private:
  ApprovalPolicy policy_;
  std::istream& in_;
  std::ostream& out_;
  bool interactive_;
};

// The lines describing an approval request (cli/approval_view.h): the target first, then the change.
std::string describe_approval(const nlohmann::json& request);

struct FollowOptions {
  bool json_lines = false;  // print every event of the thread as a JSON line instead of text
  RenderStyle style;
  // Checked between events: true once the person asked to interrupt (the follower sends turn.interrupt once).
  std::function<bool()> interrupt_requested;
  // Called with every event of the thread after it was rendered (the demo steers from here).
  std::function<void(const AgentEvent&)> on_event;
};

// Follows `turn_id` on `thread_id` until its turn.complete; returns that event's payload. The client must
// have subscribed before the turn could emit anything (before submitting it, or before the host's
// start_recovery() for a recovered turn).
Result<nlohmann::json> follow_turn(EngineClient& client, const std::string& thread_id,
                                   const std::string& turn_id, Decider& decider, std::ostream& out,
                                   const FollowOptions& options);

// The process exit status for a turn's end (docs/cli.md): 0 end, 1 error, 3 may be incomplete (max_tokens,
// content_filter), 4 budget pause, 130 interrupted.
int exit_status_for(const nlohmann::json& turn_complete);

}  // namespace keel::cli
