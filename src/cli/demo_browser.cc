// keel demo --browser — see cli/demo.h. Like the file demo, a front end of an EngineHost: the shop site
// (demo/browser/site) is served by StaticSite on 127.0.0.1:0, the engine gets the browser tools ([browser]
// enabled), the scripted model server plays demo/browser/script.json with the site's origin put in for
// "{{site}}", and the demo answers the one approval. What the shop received (its request log) says which
// steps of the task really happened; the demo prints them and fails when the order was not placed.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/demo.h"
#include "cli/demo_support.h"
#include "cli/engine_client.h"
#include "cli/engine_host.h"
#include "cli/signals.h"
#include "cli/turn_follower.h"
#include "config/config_errors.h"
#include "model_server/model_server.h"
#include "model_server/model_server_errors.h"
#include "model_server/script.h"
#include "model_server/static_site.h"
#include "util/terminal_text.h"

namespace keel::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What the shop's request log shows of each step, in the task's order: the path (and the start of the
// query) a step's page load asks for. The first missing one is where the run stopped.
struct ShopStep {
  const char* label;
  const char* request_prefix;
};
constexpr ShopStep kShopSteps[] = {
    {"opened the shop", "/index.html"},
    {"searched for \"lamp\"", "/index.html?q=lamp"},
    {"opened the desk lamp's page", "/item.html?id=desk-lamp"},
    {"opened its order form", "/order.html?item=desk-lamp"},
    {"placed the order (form submitted, confirmation accepted)", "/result.html?item=desk-lamp"},
};

// The browser tools the demo's policy lets run on the shop without asking: everything the task does but
// the order's submit (browser_fill_form), which asks.
constexpr const char* kAllowedOnTheShop[] = {"browser_navigate", "browser_click", "browser_type",
                                             "browser_handle_dialog"};

std::string read_text_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first candidate holding browser/script.json and browser/site/. Error demo.files_missing.
Result<fs::path> find_browser_demo_files() {
  std::string looked;
  for (const fs::path& dir : demo_file_candidates()) {
    const fs::path browser = dir / "browser";
    std::error_code ec;
    if (fs::is_regular_file(browser / "script.json", ec) && fs::is_directory(browser / "site", ec))
      return browser;
    looked += (looked.empty() ? "" : ", ") + browser.string();
  }
  return fail(kDemoFilesMissing,
              "the browser demo's files (script.json and site/) are not where keel looks for them (" +
                  (looked.empty() ? std::string("nowhere to look") : looked) +
                  "); run the keel built in the source tree (build/keel)");
}

// The script with the shop's origin in place of every "{{site}}".
Result<model_server::Script> load_browser_script(const fs::path& file, const std::string& origin) {
  std::string text = read_text_file(file);
  const std::string placeholder = "{{site}}";
  for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at)) {
    text.replace(at, placeholder.size(), origin);
    at += origin.size();
  }
  const json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return fail(codes::kModelServerBadScript, file.string() + ": not JSON");
  }
  auto script = model_server::parse_script(parsed);
  if (!script) return fail(script.error().code(), file.string() + ": " + script.error().message());
  return script;
}

// The first request the shop received that starts with `prefix`, or "".
std::string request_starting_with(const std::vector<std::string>& requests, const std::string& prefix) {
  for (const std::string& request : requests) {
    if (request.rfind(prefix, 0) == 0) return request;
  }
  return "";
}

int setup_failure(const CommandContext& context, const Error& error) {
  *context.err << "keel demo --browser: " << error.to_string() << "\n";
  return kExitSetup;
}

}  // namespace

int demo_browser_command(const CommandContext& context, const DemoOptions& options) {
  std::ostream& out = *context.out;
  std::ostream& notes = options.json ? *context.err : *context.out;
  const bool color = context.out_is_terminal && !options.json;
  auto bold = [color](const std::string& text) { return color ? "\x1b[1m" + text + "\x1b[0m" : text; };

  auto files = find_browser_demo_files();
  if (!files) return setup_failure(context, files.error());
  const bool scripted = options.model.empty();
  if (!scripted && context.config.model(options.model) == nullptr) {
    return setup_failure(context,
                         Error(codes::kConfigMissingReference,
                               "no model '" + options.model +
                                   "' is configured (docs/configuration.md); without --model the demo "
                                   "needs none"));
  }
  model_server::StaticSiteOptions site_options;
  site_options.root = *files / "site";
  auto site = model_server::StaticSite::start(std::move(site_options));
  if (!site) return setup_failure(context, site.error());
  const std::string origin = (*site)->origin();

  std::optional<model_server::Script> script;
  if (scripted) {
    auto loaded = load_browser_script(*files / "script.json", origin);
    if (!loaded) return setup_failure(context, loaded.error());
    script = std::move(*loaded);
  }
  auto dir = make_demo_dir(options.dir);
  if (!dir) return setup_failure(context, dir.error());
  const fs::path data_dir = *dir / "data";

  config::Config config = demo_config(context.config, data_dir);
  config.browser.enabled = true;
  std::unique_ptr<model_server::ModelServer> server;
  if (scripted) {
    auto started = serve_scripted_model(config, std::move(*script));
    if (!started) return setup_failure(context, started.error());
    server = std::move(*started);
  }
  // No workspace: the task is on the web; no file tool is offered.
  auto host = EngineHost::open(HostOptions{
      .config = config, .model_name = options.model, .workspace = std::nullopt, .purpose = "keel demo"});
  if (!host) return setup_failure(context, host.error());

  EngineClient client((*host)->transport(), "demo");
  for (const char* tool : kAllowedOnTheShop) {
    auto added = client.call("policy.addRule", {{"scope", origin}, {"tool", tool}, {"decision", "allow"}});
    if (!added) return setup_failure(context, added.error());
  }

  notes << bold("keel demo --browser") << " — a browser task, end to end\n";
  if (scripted) {
    notes << "  model      " << bold("SCRIPTED") << ": a replay of " << (*files / "script.json").string()
          << ", not an AI.\n"
          << "             The scripted model server plays the model's side over real HTTP; the engine, the\n"
          << "             store, the browser (a real Chromium), the shop and the approval are real.\n"
          << "             The same task against a real model: keel demo --browser --model NAME\n";
  } else {
    notes << "  model      " << (*host)->model_name() << " (" << (*host)->model_id()
          << ") — a real model; its steps will differ from the scripted demo's\n";
  }
  notes << "  shop       " << origin << " (" << (*files / "site").string() << ", served on loopback)\n"
        << "  policy     ask_writes, with allow rules on " << origin << " for browser_navigate,\n"
        << "             browser_click, browser_type and browser_handle_dialog: only the order's submit\n"
        << "             (browser_fill_form) asks\n"
        << "  folder     " << dir->string() << (options.dir.empty() ? " (new; delete it when done)" : "")
        << "\n"
        << "  store      " << config.store_path.string() << " (SQLite)\n\n";

  auto created = client.call("thread.create", json::object());
  if (!created) return setup_failure(context, created.error());
  const std::string thread_id = created->value("threadId", "");
  const std::string task = std::string(kBrowserDemoTask) + " The shop is at " + origin + "/index.html.";
  notes << "task: " << task << "\n\n";
  notes.flush();
  auto submitted = client.call("turn.submit", {{"threadId", thread_id}, {"input", task}});
  if (!submitted) {
    *context.err << "keel demo --browser: " << submitted.error().to_string() << "\n";
    return kExitFailed;
  }
  const std::string turn_id = submitted->value("turnId", "");

  DemoDecider decider(notes);
  InterruptRequests interrupts(*context.err, "keel demo");
  FollowOptions follow;
  follow.json_lines = options.json;
  follow.style.color = color;
  follow.interrupt_requested = [&interrupts] { return interrupts.requested(); };
  auto ended = follow_turn(client, thread_id, turn_id, decider, out, follow);
  if (!ended) {
    *context.err << "keel demo --browser: " << ended.error().to_string() << "\n";
    return kExitFailed;
  }

  // What the shop saw, step by step: the proof that the agent did the task, whatever it said.
  const std::vector<std::string> requests = (*site)->requests();
  notes << "\n" << bold("What the shop received:") << "\n";
  std::string missing;
  for (const ShopStep& step : kShopSteps) {
    const std::string request = request_starting_with(requests, step.request_prefix);
    if (request.empty() && missing.empty()) missing = step.label;
    notes << "  " << (request.empty() ? "[ ] " : "[x] ") << step.label
          << (request.empty() ? std::string(" — not reached") : "  " + terminal_safe(request)) << "\n";
  }
  const int approvals = decider.approvals();
  notes << "\n"
        << bold("keel demo --browser: ") << describe_turn_end(*ended) << "\n"
        << "  turn       " << turn_id << ": " << approvals << (approvals == 1 ? " approval" : " approvals")
        << "\n"
        << "  look again keel --set data_dir=" << data_dir.string() << " threads show " << thread_id << "\n";
  notes.flush();

  const int status = exit_status_for(*ended);
  if (status != kExitOk) return status;
  if (!missing.empty()) {
    *context.err << "keel demo --browser: " << kDemoNoResult
                 << ": the turn ended before this step: " << missing << "\n";
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace keel::cli
