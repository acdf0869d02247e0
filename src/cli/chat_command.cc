// keel chat: the command — opens the engine and the thread, prints the thread's id, puts the terminal in
// raw mode and runs a ChatSession (cli/chat_session.h) until the person leaves; the terminal's settings are
// restored on every way out (the session ends on SIGINT/SIGTERM/SIGHUP too, through the SignalWatcher).
#include <unistd.h>

#include <cstdlib>
#include <ostream>
#include <string_view>

#include "cli/chat_io.h"
#include "cli/chat_session.h"
#include "cli/commands.h"
#include "cli/engine_client.h"
#include "cli/engine_host.h"
#include "cli/signals.h"

namespace keel::cli {

using nlohmann::json;

int chat_command(const CommandContext& context, const ChatOptions& options) {
  if (!context.in_is_terminal || !context.out_is_terminal) {
    *context.err << "keel chat: needs a terminal on stdin and stdout (keel run serves scripts)\n";
    return kExitSetup;
  }
  // Recovery waits for the client's subscription, so a turn it takes up is shown from its turn.start on.
  HostOptions host_options{.config = context.config,
                           .model_name = options.model,
                           .workspace = options.workspace,
                           .defer_recovery = true};
  if (!host_options.workspace) host_options.workspace = std::filesystem::current_path();
  host_options.logger = context.logger;
  auto host = EngineHost::open(std::move(host_options));
  if (!host) {
    *context.err << "keel chat: " << host.error().to_string() << "\n";
    return kExitSetup;
  }
  EngineClient client((*host)->transport(), "cli-chat");
  (*host)->start_recovery();

  std::string thread_id = options.thread_id;
  json latest_run = nullptr;
  if (thread_id.empty()) {
    auto created = client.call("thread.create", json::object());
    if (!created) {
      *context.err << "keel chat: " << created.error().to_string() << "\n";
      return kExitFailed;
    }
    thread_id = created->value("threadId", "");
  } else {
    auto read = client.call("thread.read", {{"threadId", thread_id}});
    if (!read) {
      *context.err << "keel chat: " << read.error().to_string() << "\n";
      return kExitSetup;
    }
    if (read->contains("latestRun")) latest_run = (*read)["latestRun"];
  }
  // initialize re-sends every open approval and question; they wait in the client's queue for the session.
  auto init = client.call("initialize", {{"subscribe", true}});
  if (!init) {
    *context.err << "keel chat: " << init.error().to_string() << "\n";
    return kExitFailed;
  }

  const char* term = std::getenv("TERM");
  const bool color = term == nullptr || std::string_view(term) != "dumb";
  *context.out << "keel chat · thread " << thread_id << " · model " << (*host)->model_name() << "\n"
               << "Enter sends (steers a running turn) · Tab queues · Esc interrupts · Ctrl-D leaves"
               << (context.config.browser.enabled ? " · Ctrl-T takes the browser / hands it back" : "")
               << "\n";
  context.out->flush();

  WakePipe wake;
  if (!wake.ok()) {
    *context.err << "keel chat: cannot create a pipe\n";
    return kExitFailed;
  }
  SignalInbox signals;
  SignalWatcher watcher([&](int signal_number) {
    signals.put(signal_number);
    wake.notify();
  });
  auto saved = enter_raw_mode(STDIN_FILENO);
  if (!saved) {
    *context.err << "keel chat: " << saved.error().to_string() << "\n";
    return kExitSetup;
  }

  int status = kExitOk;
  {
    TerminalRestorer restorer(STDIN_FILENO, *saved);
    ChatSession session(*context.out, client, thread_id, color);
    // Only the thread's latest run can be continued: an older one was left behind by a newer turn.
    const std::string latest_run_id = latest_run.is_object() ? latest_run.value("runId", "") : std::string();
    for (const json& run : init->value("unfinished", json::array())) {
      if (run.value("threadId", "") == thread_id && run.value("runId", "") == latest_run_id) {
        session.adopt_unfinished(run);
      }
    }
    if (init->contains("takeover")) session.offer_takeover((*init)["takeover"]);
    EventPump pump(client, wake);
    status = session.run(STDIN_FILENO, wake, pump, signals);
    *context.out << session.close();
    context.out->flush();
  }
  *context.out << "keel chat --thread " << thread_id << " continues this conversation\n";
  context.out->flush();
  return status;
}

}  // namespace keel::cli
