// keel mcp-server through the real binary, as an MCP client sees it: initialize, tools/list, a read_file
// call, a write the policy refuses (nobody is there to approve it), and the end of input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "keel_process.h"
#include "testing/temp_dir.h"

namespace keel::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class McpServerEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(workspace());
    std::ofstream(workspace() / "notes.txt") << "first note\nsecond note\n";
    // No model: mcp-server needs none. The store goes to the test's folder.
    std::ofstream(config_file()) << "data_dir = \"" << dir_.file("data") << "\"\n";
  }

  fs::path workspace() const { return dir_.path() / "ws"; }
  std::string config_file() const { return dir_.file("config.toml"); }

  std::vector<std::string> args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> all = {"--config", config_file(), "mcp-server", "--workspace",
                                    workspace().string()};
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  }

  static std::string line(const json& message) { return message.dump() + "\n"; }

  // The JSON line on `out` that answers `id`.
  static json answer(const std::string& out, const json& id) {
    std::istringstream lines(out);
    for (std::string text; std::getline(lines, text);) {
      const json message = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (message.is_discarded()) {
        ADD_FAILURE() << "stdout carries a line that is not JSON: " << text;
        continue;
      }
      if (message.contains("id") && message["id"] == id) return message;
    }
    ADD_FAILURE() << "no answer to " << id << " in:\n" << out;
    return json();
  }

  testing::TempDir dir_;
};

json request(int id, const std::string& method, json params) {
  return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
}

TEST_F(McpServerEndToEnd, ServesTheWorkspaceToolsAndRefusesAWriteNobodyCanApprove) {
  KeelProcess keel(KEEL_BINARY, args());
  ASSERT_TRUE(keel.started());
  keel.write_stdin(line(request(1, "initialize",
                                {{"protocolVersion", "2025-11-25"},
                                 {"capabilities", json::object()},
                                 {"clientInfo", {{"name", "e2e"}, {"version", "1"}}}})));
  ASSERT_TRUE(keel.wait_stdout("\"id\":1")) << keel.err();
  keel.write_stdin(line(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}));
  keel.write_stdin(line(request(2, "tools/list", json::object())));
  keel.write_stdin(
      line(request(3, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "notes.txt"}}}})));
  keel.write_stdin(line(request(
      4, "tools/call", {{"name", "write_file"}, {"arguments", {{"path", "new.txt"}, {"content", "x"}}}})));
  ASSERT_TRUE(keel.wait_stdout("\"id\":4")) << keel.out() << keel.err();
  ASSERT_TRUE(keel.wait_stdout("\"id\":3")) << keel.out() << keel.err();
  keel.close_stdin();
  EXPECT_EQ(keel.wait_exit(), 0) << keel.err();

  const json init = answer(keel.out(), 1);
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-11-25");
  EXPECT_TRUE(init["result"]["capabilities"].contains("tools"));

  const json list = answer(keel.out(), 2);
  std::vector<std::string> names;
  for (const json& tool : list["result"]["tools"]) {
    names.push_back(tool["name"]);
    if (tool["name"] == "read_file") {
      EXPECT_EQ(tool["annotations"]["readOnlyHint"], true);
      EXPECT_EQ(tool["inputSchema"]["type"], "object");
    }
    if (tool["name"] == "write_file") {
      EXPECT_EQ(tool["annotations"]["destructiveHint"], true);
    }
  }
  for (const std::string expected : {"read_file", "write_file", "list_files", "edit_file", "search_files"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  EXPECT_EQ(std::find(names.begin(), names.end(), "ask_user"), names.end())
      << "tools that wait for a person are not offered";

  const json read = answer(keel.out(), 3);
  EXPECT_EQ(read["result"]["isError"], false);
  EXPECT_NE(read["result"]["content"][0]["text"].get<std::string>().find("second note"), std::string::npos)
      << read.dump();

  const json write = answer(keel.out(), 4);
  EXPECT_EQ(write["result"]["isError"], true);
  EXPECT_EQ(write["result"]["_meta"]["keel/code"], "mcp.call_refused");
  EXPECT_FALSE(fs::exists(workspace() / "new.txt")) << "the refused write did not run";
}

TEST_F(McpServerEndToEnd, AllowWritesRunsAWriteThePolicyWouldAskAbout) {
  const KeelRun run = run_keel(
      KEEL_BINARY, args({"--allow-writes"}),
      line(request(1, "tools/call",
                   {{"name", "write_file"}, {"arguments", {{"path", "new.txt"}, {"content", "written"}}}})));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(answer(run.out, 1)["result"]["isError"], false) << run.out;
  std::ifstream written(workspace() / "new.txt");
  std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "written");
}

TEST_F(McpServerEndToEnd, EndOfInputMidMessageIsAnsweredAndTheServerExits) {
  const KeelRun run = run_keel(KEEL_BINARY, args(), R"({"jsonrpc":"2.0","id":1,"method":"tools/ca)");
  EXPECT_EQ(run.status, 0) << run.err;
  std::istringstream lines(run.out);
  std::string first;
  std::getline(lines, first);
  const json reply = json::parse(first, nullptr, false);
  ASSERT_FALSE(reply.is_discarded()) << run.out;
  EXPECT_EQ(reply["error"]["code"], -32700);
  EXPECT_EQ(reply["error"]["data"]["code"], "rpc.parse_error");
}

}  // namespace
}  // namespace keel::e2e
