// keel run "task" and keel resume THREAD: one turn on the terminal, followed to its end
// (cli/turn_follower.h).
#include <unistd.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/engine_client.h"
#include "cli/engine_host.h"
#include "cli/signals.h"

namespace keel::cli {

using nlohmann::json;

namespace {

FollowOptions follow_options(const CommandContext& context, bool as_json, bool show_reasoning,
                             const InterruptRequests& interrupts) {
  FollowOptions options;
  options.json_lines = as_json;
  options.style.color = context.out_is_terminal && !as_json;
  options.style.show_reasoning = show_reasoning;
  options.interrupt_requested = [&interrupts] { return interrupts.requested(); };
  return options;
}

Result<std::unique_ptr<EngineHost>> open_host(const CommandContext& context, const std::string& model,
                                              const std::optional<std::filesystem::path>& workspace) {
  // Recovery waits for the client's subscription (start_recovery), so a turn it takes up is followed from
  // its turn.start on.
  HostOptions options{
      .config = context.config, .model_name = model, .workspace = workspace, .defer_recovery = true};
  if (!options.workspace) options.workspace = std::filesystem::current_path();
  options.logger = context.logger;
  return EngineHost::open(std::move(options));
}

int report(const CommandContext& context, const char* command, const Error& error) {
  *context.err << "keel " << command << ": " << error.to_string() << "\n";
  return kExitFailed;
}

}  // namespace

int run_command(const CommandContext& context, const RunOptions& options) {
  auto host = open_host(context, options.model, options.workspace);
  if (!host) {
    *context.err << "keel run: " << host.error().to_string() << "\n";
    return kExitSetup;
  }
  EngineClient client((*host)->transport(), "cli-run");
  (*host)->start_recovery();
  std::string thread_id = options.thread_id;
  if (thread_id.empty()) {
    auto created = client.call("thread.create", json::object());
    if (!created) return report(context, "run", created.error());
    thread_id = created->value("threadId", "");
  } else if (auto read = client.call("thread.read", {{"threadId", thread_id}}); !read) {
    *context.err << "keel run: " << read.error().to_string() << "\n";
    return kExitSetup;
  }
  if (!options.json) *context.err << "keel: thread " << thread_id << "\n";

  InterruptRequests interrupts(*context.err, "keel");
  json submit = {{"threadId", thread_id}, {"input", options.task}};
  if (options.budget_tokens) submit["budgetTokens"] = *options.budget_tokens;
  auto submitted = client.call("turn.submit", std::move(submit));
  if (!submitted) return report(context, "run", submitted.error());

  TerminalDecider decider(options.approval_policy, std::cin, *context.err, context.in_is_terminal);
  auto ended = follow_turn(client, thread_id, submitted->value("turnId", ""), decider, *context.out,
                           follow_options(context, options.json, options.show_reasoning, interrupts));
  if (!ended) return report(context, "run", ended.error());
  return exit_status_for(*ended);
}

int resume_command(const CommandContext& context, const ResumeOptions& options) {
  auto host = open_host(context, options.model, options.workspace);
  if (!host) {
    *context.err << "keel resume: " << host.error().to_string() << "\n";
    return kExitSetup;
  }
  EngineClient client((*host)->transport(), "cli-resume");
  (*host)->start_recovery();
  if (auto read = client.call("thread.read", {{"threadId", options.thread_id}}); !read) {
    *context.err << "keel resume: " << read.error().to_string() << "\n";
    return kExitSetup;
  }
  // initialize lists what did not end and re-sends what waits for a person (answered while following).
  auto init = client.call("initialize", {{"subscribe", true}});
  if (!init) return report(context, "resume", init.error());
  json unfinished = nullptr;
  for (const json& run : init->value("unfinished", json::array())) {
    if (run.value("threadId", "") == options.thread_id) unfinished = run;
  }
  if (unfinished.is_null()) {
    *context.out << "thread " << options.thread_id << " has no unfinished turn\n";
    return kExitOk;
  }
  const std::string state = unfinished.value("state", "");
  std::string turn_id = unfinished.value("turnId", "");
  InterruptRequests interrupts(*context.err, "keel");
  if (state == "paused_uncertain") {
    // A never-retry write was running when keel stopped: only the person can say whether it took effect.
    std::string resolution;
    if (context.in_is_terminal) {
      *context.err << "? a write was running when keel stopped and may or may not have happened.\n"
                   << "  [r] run it again  [d] it happened (mark done)  [f] it did not (fail it) > ";
      std::string answer;
      std::getline(std::cin, answer);
      resolution = answer == "r" ? "retry" : answer == "d" ? "mark_done" : answer == "f" ? "fail" : "";
    }
    if (resolution.empty()) {
      *context.err
          << "keel resume: the run is paused_uncertain; answer on a terminal (retry, mark done, fail)\n";
      return kExitFailed;
    }
    auto resolved =
        client.call("run.resolveUncertain", {{"threadId", options.thread_id}, {"resolution", resolution}});
    if (!resolved) return report(context, "resume", resolved.error());
  } else if (unfinished.value("canContinue", false)) {
    auto resumed =
        client.call("run.resume", {{"threadId", options.thread_id}, {"runId", unfinished["runId"]}});
    if (!resumed) return report(context, "resume", resumed.error());
    turn_id = resumed->value("turnId", turn_id);
  }
  if (!options.json) *context.err << "keel: continuing turn " << turn_id << " (" << state << ")\n";
  TerminalDecider decider(options.approval_policy, std::cin, *context.err, context.in_is_terminal);
  auto ended = follow_turn(client, options.thread_id, turn_id, decider, *context.out,
                           follow_options(context, options.json, false, interrupts));
  if (!ended) return report(context, "resume", ended.error());
  return exit_status_for(*ended);
}

}  // namespace keel::cli
