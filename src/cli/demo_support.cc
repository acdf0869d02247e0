// cli/demo_support.cc — see demo_support.h.
#include "cli/demo_support.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "config/environment.h"

namespace keel::cli {

namespace fs = std::filesystem;
using nlohmann::json;

Result<fs::path> make_demo_dir(const std::string& requested) {
  std::error_code ec;
  if (requested.empty()) {
    const auto tmp = config::process_environment()("TMPDIR");
    std::string pattern = (fs::path(tmp.value_or("/tmp")) / "keel-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      return fail(codes::kDemoDirFailed, "cannot make a folder like " + pattern + ": " +
                                             std::strerror(errno) + " (set TMPDIR, or pass --dir)");
    }
    return fs::path(pattern);
  }
  const fs::path dir = fs::absolute(requested, ec);
  if (ec) return fail(codes::kDemoDirFailed, requested + ": " + ec.message());
  fs::create_directories(dir, ec);
  if (ec) return fail(codes::kDemoDirFailed, "cannot make " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(dir)) return fail(codes::kDemoDirFailed, dir.string() + " is not a folder");
  if (!fs::is_empty(dir, ec) || ec) {
    // A second run into the same folder would find the first one's SUMMARY.md and thread.
    return fail(codes::kDemoDirNotEmpty, dir.string() + " is not empty; give --dir a new or empty folder");
  }
  return dir;
}

config::Config demo_config(const config::Config& base, const fs::path& data_dir) {
  config::Config config = base;
  config.data_dir = data_dir;
  config.store_path = data_dir / "keel.db";
  config.master_key_file = data_dir / "master.key";
  config.policy_mode = PolicyMode::kAskWrites;
  return config;
}

void add_scripted_model(config::Config& config, const std::string& server_url) {
  config::ProviderConfig provider;
  provider.kind = config::ProviderKind::kOpenAiChat;
  provider.base_url = server_url + "/v1";
  provider.max_retries = 0;  // a local replay has nothing to wait out
  config.providers[kScriptedModelName] = provider;
  config::ModelConfig model;
  model.provider = kScriptedModelName;
  model.model_id = kScriptedModelName;
  config.models[kScriptedModelName] = model;
  config.default_model = kScriptedModelName;
  config.task_model.clear();    // no title request: the script answers the task only
  config.token_budget.reset();  // the script's usage figures are for show; a budget must not pause it
}

Result<std::unique_ptr<model_server::ModelServer>> serve_scripted_model(config::Config& config,
                                                                        model_server::Script script) {
  model_server::ServerOptions server_options;
  server_options.script = std::move(script);
  auto started = model_server::ModelServer::start(std::move(server_options));
  if (!started) return fail(started.error());
  add_scripted_model(config, (*started)->base_url());
  return std::move(*started);
}

json DemoDecider::decide_approval(const json& request) {
  out_ << describe_approval(request) << "demo: approving on your behalf; `keel run` asks you instead\n";
  out_.flush();
  ++approvals_;
  return {{"decision", "accept"}};
}

// The scripted tasks ask nothing; a real model might.
json DemoDecider::answer_question(const json& request) {
  const json& asked = request.contains("request") ? request["request"] : json::object();
  out_ << "? " << asked.value("question", "") << "\n"
       << "demo: answering on your behalf: \"Use your judgement.\"\n";
  out_.flush();
  return {{"answer", "Use your judgement."}};
}

}  // namespace keel::cli
