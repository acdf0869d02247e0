// keel demo — see cli/demo.h. The demo is a front end like `keel run`: it opens an EngineHost, talks to it
// through an EngineClient and follows the turn with follow_turn(); only the person's part is played by the
// demo (DemoDecider approves, DemoSteer steers), and, without --model, the model's part by the scripted model
// server.
#include "cli/demo.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>
#include <utility>

#include "cli/demo_support.h"
#include "cli/engine_client.h"
#include "cli/engine_host.h"
#include "cli/signals.h"
#include "cli/turn_follower.h"
#include "config/config_errors.h"
#include "keel/clock.h"
#include "model_server/model_server.h"
#include "model_server/script.h"
#include "store/thread_repository.h"
#include "util/terminal_text.h"

namespace keel::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The person's steer: sent once, as the model's first response after a tool result starts. The engine
// publishes that item.start only after it built the request (its steer cutoff is behind it), so the steer
// cannot land in that request; and the op reaches the engine while the response streams and its tools run
// (the script pauses there), before the next request's cutoff, which waits for every steer already under
// admission. So the next request carries it, every run alike.
class DemoSteer {
 public:
  DemoSteer(EngineClient& client, std::string thread_id, std::string turn_id, std::ostream& notes)
      : client_(client), thread_id_(std::move(thread_id)), turn_id_(std::move(turn_id)), notes_(notes) {}

  void on_event(const AgentEvent& event) {
    const json& p = event.payload;
    if (event.type == "item.complete" && p.contains("node") && p["node"].value("kind", "") == "tool_result") {
      tool_result_seen_ = true;
    } else if (event.type == "item.start" && p.value("kind", "") == "assistant_message" &&
               tool_result_seen_ && !sent_) {
      send();
    }
  }

  std::string outcome() const {
    if (acked_) return "1 steer";
    return sent_ ? "the steer refused" : "no steer (the model called no tool to steer after)";
  }

 private:
  void send() {
    sent_ = true;
    notes_ << "demo: steering the running turn, as you could type while it works: \"" << kDemoSteer << "\"\n";
    notes_.flush();
    auto acked = client_.call(
        "turn.steer", {{"threadId", thread_id_}, {"expectedTurnId", turn_id_}, {"input", kDemoSteer}});
    if (acked) {
      acked_ = true;
      notes_ << "demo: steer ACKed (steerId " << acked->value("steerId", "") << ", admission #"
             << acked->value("admissionSeq", json(0)).dump()
             << "): it is in the store, and the model's next request carries it\n";
    } else {
      notes_ << "demo: the steer was refused: " << acked.error().to_string() << "\n";
    }
    notes_.flush();
  }

  EngineClient& client_;
  std::string thread_id_;
  std::string turn_id_;
  std::ostream& notes_;
  bool tool_result_seen_ = false;
  bool sent_ = false;
  bool acked_ = false;
};

Result<size_t> nodes_on_thread(Store& store, const std::string& thread_id) {
  SystemClock clock;
  ThreadRepository threads(clock);
  auto tx = KEEL_TRY(store.begin(TxMode::kRead));
  const ThreadRecord thread = KEEL_TRY(threads.get_live(*tx, thread_id));
  if (!thread.leaf_node_id) return size_t{0};
  return KEEL_TRY(threads.path_to(*tx, *thread.leaf_node_id)).size();
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int setup_failure(const CommandContext& context, const Error& error) {
  *context.err << "keel demo: " << error.to_string() << "\n";
  return kExitSetup;
}

}  // namespace

std::vector<fs::path> demo_file_candidates() {
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "demo");  // build/keel -> demo/
    candidates.push_back(exe.parent_path() / "demo");
  }
#ifdef KEEL_SOURCE_DIR
  candidates.push_back(fs::path(KEEL_SOURCE_DIR) / "demo");
#endif
  return candidates;
}

Result<fs::path> find_demo_files(const std::vector<fs::path>& candidates) {
  std::string looked;
  for (const fs::path& dir : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(dir / "script.json", ec) && fs::is_directory(dir / "workspace", ec)) return dir;
    looked += (looked.empty() ? "" : ", ") + dir.string();
  }
  return fail(kDemoFilesMissing,
              "the demo's files (script.json and workspace/) are not where keel looks for them (" +
                  (looked.empty() ? std::string("nowhere to look") : looked) +
                  "); run the keel built in the source tree (build/keel)");
}

int demo_command(const CommandContext& context, const DemoOptions& options) {
  if (options.browser) return demo_browser_command(context, options);
  std::ostream& out = *context.out;
  // With --json, stdout carries only the events; the demo's own lines go to stderr.
  std::ostream& notes = options.json ? *context.err : *context.out;
  const bool color = context.out_is_terminal && !options.json;
  auto bold = [color](const std::string& text) { return color ? "\x1b[1m" + text + "\x1b[0m" : text; };

  auto files = find_demo_files(demo_file_candidates());
  if (!files) return setup_failure(context, files.error());
  const bool scripted = options.model.empty();
  std::optional<model_server::Script> script;
  if (scripted) {
    auto loaded = model_server::load_script((*files / "script.json").string());
    if (!loaded) return setup_failure(context, loaded.error());
    script = std::move(*loaded);
  }

  if (!scripted && context.config.model(options.model) == nullptr) {
    // Before the folder is made, so a typo leaves nothing behind.
    return setup_failure(context,
                         Error(codes::kConfigMissingReference,
                               "no model '" + options.model +
                                   "' is configured (docs/configuration.md); without --model the demo "
                                   "needs none"));
  }
  auto dir = make_demo_dir(options.dir);
  if (!dir) return setup_failure(context, dir.error());
  const fs::path workspace = *dir / "workspace";
  const fs::path data_dir = *dir / "data";
  std::error_code ec;
  fs::copy(*files / "workspace", workspace, fs::copy_options::recursive, ec);
  if (ec) {
    return setup_failure(context,
                         Error(kDemoDirFailed, "cannot copy " + (*files / "workspace").string() + " to " +
                                                   workspace.string() + ": " + ec.message()));
  }

  config::Config config = demo_config(context.config, data_dir);
  // Declared before the host, so it outlives the engine's last request.
  std::unique_ptr<model_server::ModelServer> server;
  if (scripted) {
    auto started = serve_scripted_model(config, std::move(*script));
    if (!started) return setup_failure(context, started.error());
    server = std::move(*started);
  }
  auto host = EngineHost::open(HostOptions{
      .config = config, .model_name = options.model, .workspace = workspace, .purpose = "keel demo"});
  if (!host) return setup_failure(context, host.error());

  notes << bold("keel demo") << " — a real agent task, end to end\n";
  if (scripted) {
    notes << "  model      " << bold("SCRIPTED") << ": a replay of " << (*files / "script.json").string()
          << ", not an AI.\n"
          << "             The scripted model server plays the model's side over real HTTP; the engine, the\n"
          << "             store, the file tools, the approval and the steer are real.\n"
          << "             The same task against a real model: keel demo --model NAME (a model of your "
             "config)\n";
  } else {
    const config::ModelConfig* model = config.model((*host)->model_name());
    notes << "  model      " << (*host)->model_name() << " (" << (*host)->model_id() << ", provider "
          << (model != nullptr ? model->provider : "?") << ") — a real model; its replies will differ from\n"
          << "             the scripted demo's\n";
  }
  notes << "  folder     " << dir->string() << (options.dir.empty() ? " (new; delete it when done)" : "")
        << "\n"
        << "  workspace  " << workspace.string() << " (a copy of " << (*files / "workspace").string() << ")\n"
        << "  store      " << config.store_path.string() << " (SQLite)\n\n";

  EngineClient client((*host)->transport(), "demo");
  auto created = client.call("thread.create", json::object());
  if (!created) return setup_failure(context, created.error());
  const std::string thread_id = created->value("threadId", "");
  notes << "task: " << kDemoTask << "\n\n";
  notes.flush();
  auto submitted = client.call("turn.submit", {{"threadId", thread_id}, {"input", kDemoTask}});
  if (!submitted) {
    *context.err << "keel demo: " << submitted.error().to_string() << "\n";
    return kExitFailed;
  }
  const std::string turn_id = submitted->value("turnId", "");

  DemoSteer steer(client, thread_id, turn_id, notes);
  DemoDecider decider(notes);
  json total_usage = json::object();
  InterruptRequests interrupts(*context.err, "keel demo");
  FollowOptions follow;
  follow.json_lines = options.json;
  follow.style.color = color;
  follow.interrupt_requested = [&interrupts] { return interrupts.requested(); };
  follow.on_event = [&](const AgentEvent& event) {
    if (event.type == "token.usage" && event.payload.contains("total")) total_usage = event.payload["total"];
    steer.on_event(event);
  };
  auto ended = follow_turn(client, thread_id, turn_id, decider, out, follow);
  if (!ended) {
    *context.err << "keel demo: " << ended.error().to_string() << "\n";
    return kExitFailed;
  }

  const fs::path result = workspace / kDemoResultFile;
  const bool written = fs::is_regular_file(result, ec);
  notes << "\n";
  if (written) {
    notes << bold(std::string(kDemoResultFile) + ", as the agent wrote it:") << "\n";
    for (const std::string& line : lines_of(read_file(result)))
      notes << "  │ " << terminal_safe(line) << "\n";
    notes << "\n";
  }
  const int approvals = decider.approvals();
  notes << bold("keel demo: ") << describe_turn_end(*ended) << "\n"
        << "  turn       " << turn_id << ": " << approvals
        << (approvals == 1 ? " approval, " : " approvals, ") << steer.outcome() << "\n"
        << "  tokens     " << total_usage.value("inputTokens", int64_t{0}) << " in ("
        << total_usage.value("cachedInputTokens", int64_t{0}) << " cached) / "
        << total_usage.value("outputTokens", int64_t{0}) << " out\n";
  if (auto nodes = nodes_on_thread((*host)->store(), thread_id)) {
    notes << "  store      " << *nodes << " nodes on thread " << thread_id << "\n";
  } else {
    notes << "  store      thread " << thread_id << " (" << nodes.error().to_string() << ")\n";
  }
  notes << "  look again keel --set data_dir=" << data_dir.string() << " threads show " << thread_id << "\n";
  notes.flush();

  const int status = exit_status_for(*ended);
  if (status != kExitOk) return status;
  if (!written) {
    *context.err << "keel demo: " << kDemoNoResult << ": the turn ended without writing " << kDemoResultFile
                 << " in " << workspace.string() << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace keel::cli
