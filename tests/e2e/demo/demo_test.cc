// keel demo end to end: the binary run as a person runs it (the scripted model, then --model against a
// provider of a config file), the shipped script, and where the demo looks for its files.
#include "cli/demo.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>

#include "cli/engine_host.h"
#include "keel/clock.h"
#include "keel_process.h"
#include "model_server/model_server.h"
#include "model_server/script.h"
#include "store/thread_repository.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kKeel = KEEL_BINARY;
const fs::path kDemoFiles = KEEL_DEMO_FILES;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The nodes of the store's only thread, in order, read through keel's own store API.
struct StoredThread {
  std::string id;
  std::vector<NodeRecord> nodes;
};

StoredThread read_only_thread(const fs::path& data_dir) {
  config::Config config;
  config.store_path = data_dir / "keel.db";
  auto handle = cli::open_store(config, /*exclusive=*/false);
  EXPECT_TRUE(handle.has_value()) << handle.error().to_string();
  if (!handle) return {};
  SystemClock clock;
  ThreadRepository threads(clock);
  auto tx = handle->store->begin(TxMode::kRead);
  EXPECT_TRUE(tx.has_value());
  if (!tx) return {};
  auto list = threads.list(**tx);
  EXPECT_TRUE(list.has_value());
  if (!list) return {};
  EXPECT_EQ(list->size(), 1u);
  if (list->size() != 1 || !list->front().leaf_node_id) return {};
  StoredThread out;
  out.id = list->front().id;
  auto path = threads.path_to(**tx, *list->front().leaf_node_id);
  EXPECT_TRUE(path.has_value());
  if (path) out.nodes = std::move(*path);
  return out;
}

std::vector<std::string> tool_call_names(const StoredThread& thread) {
  std::vector<std::string> names;
  for (const NodeRecord& node : thread.nodes) {
    if (node.kind == NodeKind::kToolCall) names.push_back(node.body.value("name", ""));
  }
  return names;
}

// Index of the first node of `kind` for which `pred` holds, after `from`; -1 when none.
int find_node(const StoredThread& thread, NodeKind kind, const std::function<bool(const json&)>& pred,
              int from = -1) {
  for (int i = from + 1; i < static_cast<int>(thread.nodes.size()); ++i) {
    if (thread.nodes[i].kind == kind && pred(thread.nodes[i].body)) return i;
  }
  return -1;
}

bool is_steer(const json& body) {
  return body.value("steered", false) && body.dump().find(cli::kDemoSteer) != std::string::npos;
}

// The demo steered as the model's second response started: the steer sits after the reads' results (that
// response's tools) and before the write, the one approval.
void expect_steer_before_the_write(const StoredThread& thread) {
  const int steer = find_node(thread, NodeKind::kUserMessage, is_steer);
  ASSERT_GE(steer, 0) << "no steered user message in the store";
  const int last_read_result = [&] {
    int last = -1;
    for (int i = 0; i < static_cast<int>(thread.nodes.size()); ++i) {
      if (thread.nodes[i].kind == NodeKind::kToolResult) last = i;
      if (thread.nodes[i].kind == NodeKind::kToolCall &&
          thread.nodes[i].body.value("name", "") == "write_file")
        break;
    }
    return last;
  }();
  const int write = find_node(thread, NodeKind::kToolCall,
                              [](const json& body) { return body.value("name", "") == "write_file"; });
  ASSERT_GE(write, 0);
  EXPECT_LT(last_read_result, steer);
  EXPECT_LT(steer, write);
  int approvals = 0;
  for (const NodeRecord& node : thread.nodes) {
    if (node.kind == NodeKind::kApprovalDecision) {
      ++approvals;
      EXPECT_EQ(node.body.value("decision", ""), "accept");
    }
  }
  EXPECT_EQ(approvals, 1);
}

void expect_summary_with_owners(const fs::path& workspace) {
  const std::string summary = read_text(workspace / cli::kDemoResultFile);
  ASSERT_FALSE(summary.empty()) << "no " << cli::kDemoResultFile << " in " << workspace;
  EXPECT_NE(summary.find("| Owner |"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Tomás"), std::string::npos) << summary;
  EXPECT_NE(summary.find("Priya"), std::string::npos) << summary;
}

TEST(DemoScript, ShippedScriptParsesIsLabelledScriptedAndAnswersTheDemosSteer) {
  auto script = model_server::load_script((kDemoFiles / "script.json").string());
  ASSERT_TRUE(script.has_value()) << script.error().to_string();
  const json raw = json::parse(read_text(kDemoFiles / "script.json"));
  EXPECT_NE(raw.at("comment").dump().find("SCRIPTED"), std::string::npos);
  int steer_answers = 0;
  for (const model_server::ScriptedResponse& response : script->responses) {
    if (response.match && std::string(cli::kDemoSteer).find(*response.match) != std::string::npos)
      ++steer_answers;
  }
  EXPECT_EQ(steer_answers, 1) << "the script must answer the demo's steer with one `match`";
}

TEST(DemoFiles, MissingFilesAreACodedErrorNamingEveryPlaceLooked) {
  testing::TempDir dir;
  const fs::path empty = dir.path() / "empty";
  fs::create_directories(empty / "workspace");  // a workspace without script.json does not count
  auto found = cli::find_demo_files({dir.path() / "nowhere", empty});
  ASSERT_FALSE(found.has_value());
  EXPECT_EQ(found.error().code(), cli::kDemoFilesMissing);
  EXPECT_NE(found.error().message().find((dir.path() / "nowhere").string()), std::string::npos);
  EXPECT_NE(found.error().message().find(empty.string()), std::string::npos);

  std::ofstream(empty / "script.json") << "{}";
  auto now_found = cli::find_demo_files({dir.path() / "nowhere", empty});
  ASSERT_TRUE(now_found.has_value());
  EXPECT_EQ(*now_found, empty);
}

// This test's executable has no demo/ beside it: the source tree keel was built from is the fallback.
TEST(DemoFiles, FoundInTheSourceTreeWhenNotBesideTheExecutable) {
  auto found = cli::find_demo_files(cli::demo_file_candidates());
  ASSERT_TRUE(found.has_value()) << found.error().to_string();
  EXPECT_TRUE(fs::equivalent(*found, kDemoFiles));
}

TEST(DemoCommand, RunsTheTaskEndToEndWithTheScriptedModelAnApprovalAndASteer) {
  testing::TempDir dir;
  const fs::path demo = dir.path() / "demo";
  const e2e::KeelRun run = e2e::run_keel(kKeel, {"demo", "--dir", demo.string()});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("SCRIPTED"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("not an AI"), std::string::npos);
  EXPECT_NE(run.out.find("keel demo --model NAME"), std::string::npos);
  EXPECT_NE(run.out.find("? approve write_file"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("demo: approving on your behalf; `keel run` asks you instead"), std::string::npos);
  EXPECT_NE(run.out.find("demo: steer ACKed (steerId "), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(std::string("↳ steer: ") + cli::kDemoSteer), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("→ read_file"), std::string::npos);
  EXPECT_NE(run.out.find("keel demo: completed"), std::string::npos) << run.out;
  expect_summary_with_owners(demo / "workspace");
  // The copy is the demo's; the shipped workspace stays as it was.
  EXPECT_FALSE(fs::exists(kDemoFiles / "workspace" / cli::kDemoResultFile));

  const StoredThread thread = read_only_thread(demo / "data");
  ASSERT_FALSE(thread.id.empty());
  EXPECT_EQ(tool_call_names(thread),
            (std::vector<std::string>{"list_files", "read_file", "read_file", "read_file", "write_file"}));
  expect_steer_before_the_write(thread);
  EXPECT_NE(run.out.find(thread.id), std::string::npos);

  // The command the demo prints to look at the thread again works as printed.
  std::smatch again;
  ASSERT_TRUE(std::regex_search(run.out, again, std::regex("look again +keel ([^\\n]+)"))) << run.out;
  std::vector<std::string> args;
  std::istringstream words(again[1].str());
  for (std::string word; words >> word;) args.push_back(word);
  const e2e::KeelRun show = e2e::run_keel(kKeel, args);
  EXPECT_EQ(show.status, 0) << show.err;
  EXPECT_NE(show.out.find(cli::kDemoSteer), std::string::npos) << show.out;
}

TEST(DemoCommand, JsonPrintsOnlyEventLinesOnStdout) {
  testing::TempDir dir;
  const e2e::KeelRun run = e2e::run_keel(kKeel, {"demo", "--json", "--dir", (dir.path() / "demo").string()});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  std::set<std::string> types;
  std::istringstream lines(run.out);
  json last;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_TRUE(json::accept(line)) << "not a JSON line: " << line;
    last = json::parse(line);
    types.insert(last.value("type", ""));
  }
  EXPECT_TRUE(types.contains("approval.request"));
  EXPECT_TRUE(types.contains("item.complete"));
  EXPECT_EQ(last.value("type", ""), "turn.complete");
  EXPECT_EQ(last["payload"].value("stopReason", ""), "end");
  EXPECT_NE(run.out.find(cli::kDemoSteer), std::string::npos);
  EXPECT_NE(run.err.find("SCRIPTED"), std::string::npos) << run.err;
  expect_summary_with_owners(dir.path() / "demo" / "workspace");
}

TEST(DemoCommand, WithModelRunsTheSameTaskAgainstAConfiguredProvider) {
  // A second scripted server, which keel knows only as an Anthropic provider of the config file.
  auto script = model_server::load_script((kDemoFiles / "script.json").string());
  ASSERT_TRUE(script.has_value());
  model_server::ServerOptions options;
  options.script = std::move(*script);
  auto server = model_server::ModelServer::start(std::move(options));
  ASSERT_TRUE(server.has_value()) << server.error().to_string();
  testing::TempDir dir;
  const fs::path config_file = dir.path() / "config.toml";
  std::ofstream(config_file) << "[providers.local]\nkind = \"anthropic\"\nbase_url = \""
                             << (*server)->base_url() << "\"\n\n[models.tested]\nprovider = \"local\"\n";
  const fs::path demo = dir.path() / "demo";

  const e2e::KeelRun run = e2e::run_keel(
      kKeel, {"--config", config_file.string(), "demo", "--model", "tested", "--dir", demo.string()});
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_EQ(run.out.find("SCRIPTED"), std::string::npos) << "a configured model is not labelled scripted";
  EXPECT_NE(run.out.find("model      tested"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("demo: steer ACKed"), std::string::npos) << run.out;

  const std::vector<json> requests = (*server)->requests();
  ASSERT_EQ(requests.size(), 4u);
  bool steer_sent = false;
  for (const json& request : requests) {
    EXPECT_EQ(request.value("path", ""), "/v1/messages");
    if (request["body"].dump().find(cli::kDemoSteer) != std::string::npos) steer_sent = true;
  }
  EXPECT_TRUE(steer_sent);
  expect_summary_with_owners(demo / "workspace");
  expect_steer_before_the_write(read_only_thread(demo / "data"));
}

TEST(DemoCommand, RefusesADirThatIsNotEmpty) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "something") << "x";
  const e2e::KeelRun run = e2e::run_keel(kKeel, {"demo", "--dir", dir.path().string()});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(cli::kDemoDirNotEmpty), std::string::npos) << run.err;
}

TEST(DemoCommand, AnUnknownModelIsRefusedBeforeAnythingIsWritten) {
  testing::TempDir dir;
  const fs::path demo = dir.path() / "demo";
  const e2e::KeelRun run = e2e::run_keel(kKeel, {"demo", "--model", "no-such-model", "--dir", demo.string()});
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("config.missing_reference"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(demo));
}

}  // namespace
}  // namespace keel
