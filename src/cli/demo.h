// cli/demo.h — `keel demo`: the main job, a real agent task end to end (docs/cli.md, *keel demo*).
//
// The demo copies the shipped workspace (demo/workspace) into a fresh folder, opens a real engine on an
// embedded SQLite store in that folder, and gives it one task: read the notes and write SUMMARY.md with the
// open items. The model's side is played by the scripted model server from demo/script.json — a replay,
// not an AI, and the banner says so — unless `--model NAME` names a configured model, which then gets the
// same task, the same workspace copy and the same approval and steer.
//
// What it guarantees: the model's writes go through the gatekeeper in ask_writes mode, whatever the
// configuration says, so the write asks for approval; the demo approves as the person would, saying so.
// The demo steers the running turn once (kDemoSteer), as the model's first response after a tool result
// starts. The engine announces that response (item.start) only after it built the request, so the steer
// never lands in it; it lands in the next request when it reaches the engine before this response and its
// tools end (the script pauses 600 ms there), else in a later one. A turn waiting for an approval takes no
// steers (thread.waiting), so the approval is not the place. Nothing outside the demo's folder is written
// (store, master key, workspace).
//
// `keel demo --browser` (demo_browser.cc) is the same kind of run on the web: the shop in demo/browser/site,
// served on 127.0.0.1, and a task that searches it, opens an item, fills and submits the order form (the one
// call that asks for approval: the demo adds allow rules on the shop's origin for the other writes),
// accepts the confirmation dialog and reads the result back. The engine runs with the browser tools
// ([browser] enabled, whatever the configuration says). It exits 0 only when the shop received the order.
//
// Exit status: 0 when the turn ended normally and SUMMARY.md exists (--browser: the shop received the order);
// 2 when the demo cannot start (its files missing, --dir not empty, the store, the model); otherwise the
// turn's status (exit_status_for), or 1 with demo.no_result when the turn ended without writing SUMMARY.md.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_errors.h"
#include "cli/commands.h"
#include "keel/error.h"

namespace keel::cli {

using codes::kDemoDirFailed;
using codes::kDemoDirNotEmpty;
using codes::kDemoFilesMissing;
using codes::kDemoNoResult;

// The task the demo gives, the steer it sends, and the file the task must produce (in the workspace).
inline constexpr char kDemoTask[] = "Read the notes in this folder and write SUMMARY.md with the open items.";
inline constexpr char kDemoSteer[] = "Also list the owners next to each item.";
inline constexpr char kDemoResultFile[] = "SUMMARY.md";
// The browser demo's task (the shop's URL is appended).
inline constexpr char kBrowserDemoTask[] =
    "Order two desk lamps from the Keel Supply shop for Ada Lovelace (ada@example.com) and tell me the "
    "order number.";

struct DemoOptions {
  std::string model;  // "" = the scripted model server with the shipped script
  std::string dir;    // "" = a new folder under $TMPDIR
  bool json = false;
  bool browser = false;  // the browser task on the demo shop instead of the file task
};

int demo_command(const CommandContext& context, const DemoOptions& options);
int demo_browser_command(const CommandContext& context, const DemoOptions& options);

// Where the demo's files may be, in order: beside the executable's folder (build/keel -> demo/), in it,
// then in the source tree keel was built from.
std::vector<std::filesystem::path> demo_file_candidates();
// The first candidate holding script.json and a workspace/ folder. Error demo.files_missing, naming every
// place looked at.
Result<std::filesystem::path> find_demo_files(const std::vector<std::filesystem::path>& candidates);

}  // namespace keel::cli
