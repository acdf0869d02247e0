// keel — command-line entry point.
//
// Until the agent loop lands, `keel demo` shows the durable store at work: it creates a thread through a
// receipted command (and replays a duplicate of it), records a conversation with two parallel tool calls,
// forks it, selects branches, and prints each branch's session context as the model would receive it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/demo.h"

int main(int argc, char** argv) {
  CLI::App app{"keel — a durable, steerable LLM agent engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "keel 0.1.0");

  std::string db_path = "keel-demo.db";
  bool keep = false;
  CLI::App* demo = app.add_subcommand("demo", "Show the durable store: threads, branches, forks, receipts");
  demo->add_option("--db", db_path, "SQLite database file (created if missing)");
  demo->add_flag("--keep", keep, "Keep the database's previous contents instead of starting fresh");

  CLI11_PARSE(app, argc, argv);

  if (demo->parsed()) return keel::cli::run_store_demo(db_path, keep, std::cout);
  return 0;
}
