#include "cli/turn_follower.h"

#include <algorithm>
#include <istream>
#include <ostream>

#include "cli/approval_view.h"
#include "util/terminal_text.h"

namespace keel::cli {

using nlohmann::json;

std::optional<ApprovalPolicy> parse_approval_policy(std::string_view name) {
  if (name == "ask") return ApprovalPolicy::kAsk;
  if (name == "accept") return ApprovalPolicy::kAccept;
  if (name == "decline") return ApprovalPolicy::kDecline;
  return std::nullopt;
}

std::string describe_approval(const json& request) { return approval_text(request); }

json TerminalDecider::decide_approval(const json& request) {
  if (policy_ == ApprovalPolicy::kAccept) {
    out_ << approval_text(request) << "approval: accepted by --approval-policy accept\n";
    return {{"decision", "accept"}};
  }
  if (policy_ == ApprovalPolicy::kDecline || !interactive_) {
    const std::string why =
        policy_ == ApprovalPolicy::kDecline ? "--approval-policy decline" : "no terminal to ask on";
    out_ << approval_text(request) << "approval: declined (" << why << ")\n";
    return {{"decision", "decline"}, {"reason", why}};
  }
  out_ << approval_text(request);
  const std::vector<std::string> choices = approval_choice_lines(request);
  for (;;) {
    for (size_t i = 0; i < choices.size(); ++i)
      out_ << "  " << choices[i] << (i + 1 < choices.size() ? "\n" : "");
    out_ << " > ";
    out_.flush();
    std::string answer;
    if (!std::getline(in_, answer)) return {{"decision", "decline"}, {"reason", "no answer (input closed)"}};
    if (std::optional<json> params = approval_answer(request, answer)) return *params;
  }
}

json TerminalDecider::answer_question(const json& request) {
  const json& asked = request.contains("request") ? request["request"] : json::object();
  const std::string question = asked.value("question", "");
  if (!interactive_) {
    out_ << "question (not answered: no terminal): " << question << "\n";
    return {{"answer", ""}};
  }
  out_ << "? " << question;
  if (asked.contains("choices") && asked["choices"].is_array() && !asked["choices"].empty()) {
    out_ << " " << asked["choices"].dump();
  }
  out_ << " > ";
  out_.flush();
  std::string answer;
  std::getline(in_, answer);
  return {{"answer", answer}};
}

Result<json> follow_turn(EngineClient& client, const std::string& thread_id, const std::string& turn_id,
                         Decider& decider, std::ostream& out, const FollowOptions& options) {
  TextRenderer renderer(out, options.style);
  bool interrupt_sent = false;
  for (;;) {
    if (!interrupt_sent && options.interrupt_requested && options.interrupt_requested()) {
      interrupt_sent = true;
      client.send("turn.interrupt", {{"threadId", thread_id}});
    }
    std::optional<AgentEvent> event = client.next_event(std::chrono::milliseconds(100));
    if (!event || event->thread_id != thread_id) continue;
    // JSON lines stay exact for programs (JSON escapes the C0 controls). Everything else shows the event to
    // a person (the renderer, the decider's prompts, the demo's notes): its strings come from the model,
    // tools and files, so their control sequences are made visible first (util/terminal_text.h).
    if (options.json_lines) render_json_line(out, *event);
    event->payload = terminal_safe_json(event->payload);
    if (!options.json_lines) renderer.render(*event);
    const json& p = event->payload;
    if (event->type == "approval.request") {
      renderer.break_line();
      json params = decider.decide_approval(p);
      params["threadId"] = thread_id;
      params["approvalId"] = p.value("approvalId", "");
      auto answered = client.call("approval.response", std::move(params));
      if (!answered && answered.error().code() != "approval.expired") return fail(answered.error());
    } else if (event->type == "interaction.request" && p.value("kind", "") == "ask_user") {
      renderer.break_line();
      json response = decider.answer_question(p);
      auto answered = client.call("interaction.response", {{"threadId", thread_id},
                                                           {"interactionId", p.value("interactionId", "")},
                                                           {"response", std::move(response)}});
      if (!answered && answered.error().code() != "interaction.expired") return fail(answered.error());
    }
    if (options.on_event) options.on_event(*event);
    if (event->type == "turn.complete" && p.value("turnId", "") == turn_id) return p;
  }
}

int exit_status_for(const json& turn_complete) {
  const std::string reason = turn_complete.value("stopReason", "");
  if (reason == "end") return 0;
  if (reason == "max_tokens" || reason == "content_filter") return 3;
  if (reason == "budget_pause") return 4;
  if (reason == "interrupted") return 130;
  return 1;
}

}  // namespace keel::cli
