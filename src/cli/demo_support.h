// cli/demo_support.h — what `keel demo` and `keel demo --browser` share: the demo's own folder, the
// configuration it runs with (every file in that folder, writes asking for approval), the scripted model's
// binding, and the person's side that approves and says so (docs/cli.md, *keel demo*).
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "cli/cli_errors.h"
#include "cli/turn_follower.h"
#include "config/config.h"
#include "keel/error.h"
#include "model_server/model_server.h"

namespace keel::cli {

// The scripted model's provider and model name.
inline constexpr char kScriptedModelName[] = "scripted-demo";

// The demo's folder: --dir (made if missing, refused if it holds anything: demo.dir_not_empty), else a new
// one under $TMPDIR. Errors: demo.dir_failed, demo.dir_not_empty.
Result<std::filesystem::path> make_demo_dir(const std::string& requested);

// The configuration the demo runs with: the person's own (providers, models, keys), but every file in
// `data_dir`, and writes asking for approval whatever the configured mode.
config::Config demo_config(const config::Config& base, const std::filesystem::path& data_dir);

// Binds the scripted model server at `server_url` as the default model (no task model, no token budget).
void add_scripted_model(config::Config& config, const std::string& server_url);

// Starts a scripted model server replaying `script` on 127.0.0.1 and binds it (add_scripted_model). Keep the
// server alive until the engine that uses it is gone.
Result<std::unique_ptr<model_server::ModelServer>> serve_scripted_model(config::Config& config,
                                                                        model_server::Script script);

// The person's side: approves every request, saying so on `out`, and answers questions with "Use your
// judgement."
class DemoDecider final : public Decider {
 public:
  explicit DemoDecider(std::ostream& out) : out_(out) {}

  nlohmann::json decide_approval(const nlohmann::json& request) override;
  nlohmann::json answer_question(const nlohmann::json& request) override;

  int approvals() const { return approvals_; }

 private:
  std::ostream& out_;
  int approvals_ = 0;
};

}  // namespace keel::cli
