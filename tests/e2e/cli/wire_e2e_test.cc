// keel run through the real binary against the scripted model server on each wire format (OpenAI Chat,
// OpenAI Responses, Anthropic), where the server refuses a history the real API would refuse
// (model_server/history_rules.h): the failure breaker with parallel calls, tool calls with a stop reason
// other than tool use, the breaker's tools-off ending, and the conversation after a reply refused as a
// protocol error (issue 14, points 4, 9 and 12).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "keel_process.h"
#include "model_server/model_server.h"
#include "testing/temp_dir.h"

namespace keel::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The provider kind (configuration) and a raw stop reason that is not "use tools" (for Responses, an
// incomplete response: a completed one with calls means tool use).
struct WireCase {
  std::string kind;
  std::string end_reason;
};

class WireEndToEnd : public ::testing::TestWithParam<WireCase> {
 protected:
  void SetUp() override { fs::create_directories(workspace()); }

  fs::path workspace() const { return dir_.path() / "ws"; }

  // Starts the scripted model and writes a configuration naming it; `provider_extra` goes into the
  // provider's table.
  void serve_script(json script, const std::string& provider_extra = "") {
    auto parsed = model_server::parse_script(script);
    ASSERT_TRUE(parsed) << parsed.error().to_string();
    model_server::ServerOptions options;
    options.script = std::move(*parsed);
    auto server = model_server::ModelServer::start(std::move(options));
    ASSERT_TRUE(server) << server.error().to_string();
    server_ = std::move(*server);
    const bool anthropic = GetParam().kind == "anthropic";
    std::ofstream(dir_.file("config.toml"))
        << "data_dir = \"" << dir_.file("data") << "\"\n"
        << "default_model = \"scripted\"\n"
        << "[providers.local]\nkind = \"" << GetParam().kind << "\"\nmax_retries = 0\n"
        << "base_url = \"" << server_->base_url() << (anthropic ? "" : "/v1") << "\"\n"
        << provider_extra << "[models.scripted]\nprovider = \"local\"\n";
  }

  KeelRun keel(std::vector<std::string> args) {
    args.insert(args.begin(), {"--config", dir_.file("config.toml")});
    return run_keel(KEEL_BINARY, args, "");
  }

  static std::string thread_of(const KeelRun& run) {
    const std::string marker = "keel: thread ";
    const size_t at = run.err.find(marker);
    if (at == std::string::npos) return "";
    return run.err.substr(at + marker.size(), run.err.find('\n', at) - at - marker.size());
  }

  // The turn.complete payload of a `--json` run.
  static json turn_complete(const KeelRun& run) {
    std::istringstream lines(run.out);
    std::string line;
    json last;
    while (std::getline(lines, line)) {
      json event = json::parse(line, nullptr, false);
      if (!event.is_discarded() && event.value("type", "") == "turn.complete") last = event["payload"];
    }
    return last;
  }

  json text_reply(const std::string& match, const std::string& text) const {
    return {{"match", match}, {"steps", {{{"type", "text"}, {"text", text}}}}};
  }
  static json calls_reply(const std::string& match, json calls) {
    return {{"match", match}, {"steps", {{{"type", "tool_calls"}, {"calls", std::move(calls)}}}}};
  }
  static json read_missing(const std::string& id) {
    return {{"id", id}, {"name", "read_file"}, {"arguments", {{"path", "missing-" + id + ".txt"}}}};
  }

  testing::TempDir dir_;
  std::unique_ptr<model_server::ModelServer> server_;
};

// Point 4: six parallel calls that all fail raise the reminder (3) and tools-off (5) notices; they go after
// all six results, so the next request is one the API takes, and the thread stays usable.
TEST_P(WireEndToEnd, BreakerNoticesAfterParallelFailuresKeepTheHistoryValid) {
  json six = json::array();
  for (int i = 1; i <= 6; ++i) six.push_back(read_missing("r" + std::to_string(i)));
  serve_script({{"responses",
                 {calls_reply("read them all", six), text_reply("again please", "Second answer."),
                  text_reply("", "I could not read them.")}}});
  KeelRun run = keel({"run", "read them all", "--workspace", workspace().string()});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("I could not read them."), std::string::npos) << run.out;
  KeelRun again =
      keel({"run", "again please", "--thread", thread_of(run), "--workspace", workspace().string()});
  EXPECT_EQ(again.status, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("Second answer."), std::string::npos) << again.out;
  EXPECT_EQ(server_->requests().size(), 3u);
}

// Point 9: with tools off (five failures in a row) a final reply that still asks for a tool ends the turn
// with a documented ending: stopReason error, code turn.tools_disabled, exit status 1.
TEST_P(WireEndToEnd, AToolCallAfterToolsWentOffEndsWithToolsDisabled) {
  json responses = json::array();
  for (int i = 1; i <= 5; ++i) {
    json reply = calls_reply("", json::array({read_missing("f" + std::to_string(i))}));
    reply.erase("match");
    responses.push_back(reply);
  }
  json last = calls_reply("", json::array({read_missing("f6")}));
  last.erase("match");
  responses.push_back(last);
  responses.push_back(text_reply("and now", "Fine."));
  serve_script({{"responses", responses}});
  KeelRun run = keel({"run", "read", "--json", "--workspace", workspace().string()});
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  const json done = turn_complete(run);
  EXPECT_EQ(done.value("stopReason", ""), "error") << done.dump();
  EXPECT_EQ(done["error"].value("code", ""), "turn.tools_disabled") << done.dump();
  // The call got a result, so the thread takes a new turn.
  std::string thread;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    json event = json::parse(line, nullptr, false);
    if (!event.is_discarded() && event.contains("threadId")) thread = event["threadId"];
  }
  ASSERT_FALSE(thread.empty()) << run.out;
  KeelRun next = keel({"run", "and now", "--thread", thread, "--workspace", workspace().string()});
  EXPECT_EQ(next.status, 0) << next.out << next.err;
}

// Point 12: a reply whose tool calls come with a stop reason that is not tool use fails closed (nothing
// runs); the next turn's request still holds that reply between the two user turns.
TEST_P(WireEndToEnd, AReplyRefusedAsAProtocolErrorStaysInTheNextRequest) {
  json bad =
      calls_reply("save it", json::array({{{"id", "w1"},
                                           {"name", "write_file"},
                                           {"arguments", {{"path", "out.txt"}, {"content", "saved"}}}}}));
  bad["stop_reason"] = GetParam().end_reason;
  serve_script({{"responses", {bad, text_reply("what happened", "Nothing was written.")}}});
  KeelRun run = keel({"run", "save it", "--workspace", workspace().string(), "--approval-policy", "accept"});
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("provider.protocol_error"), std::string::npos) << run.out;
  EXPECT_FALSE(fs::exists(workspace() / "out.txt")) << "no tool runs for a refused reply";
  KeelRun next =
      keel({"run", "what happened", "--thread", thread_of(run), "--workspace", workspace().string()});
  EXPECT_EQ(next.status, 0) << next.out << next.err;
  auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u);
  const json& body = requests[1]["body"];
  std::vector<std::string> roles;
  for (const json& item : body.contains("input") ? body["input"] : body["messages"]) {
    if (item.value("role", "") != "system") roles.push_back(item.value("role", ""));
  }
  EXPECT_EQ(roles, (std::vector<std::string>{"user", "assistant", "user"})) << body.dump();
}

INSTANTIATE_TEST_SUITE_P(Wires, WireEndToEnd,
                         ::testing::Values(WireCase{"openai-chat", "stop"},
                                           WireCase{"openai-responses", "max_output_tokens"},
                                           WireCase{"anthropic", "end_turn"}),
                         [](const ::testing::TestParamInfo<WireCase>& param_info) {
                           std::string name = param_info.param.kind;
                           std::erase(name, '-');
                           return name;
                         });

// Point 9, OpenAI Chat: finish_reason "stop" with tool calls fails closed by default; a provider set to
// `stop_with_tool_calls = "tool_use"` (for compatible servers that send it) runs them.
class ChatStopEndToEnd : public WireEndToEnd {};

TEST_P(ChatStopEndToEnd, StopWithToolCallsRunsTheToolOnlyWhenConfigured) {
  json call =
      calls_reply("save it", json::array({{{"id", "w1"},
                                           {"name", "write_file"},
                                           {"arguments", {{"path", "out.txt"}, {"content", "saved"}}}}}));
  call["stop_reason"] = "stop";
  serve_script({{"responses", {call, text_reply("", "Saved.")}}}, "stop_with_tool_calls = \"tool_use\"\n");
  KeelRun run = keel({"run", "save it", "--workspace", workspace().string(), "--approval-policy", "accept"});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_TRUE(fs::exists(workspace() / "out.txt"));
}

INSTANTIATE_TEST_SUITE_P(Chat, ChatStopEndToEnd, ::testing::Values(WireCase{"openai-chat", "stop"}),
                         [](const ::testing::TestParamInfo<WireCase>&) { return std::string("openaichat"); });

}  // namespace
}  // namespace keel::e2e
