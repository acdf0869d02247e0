// keel run with an MCP server configured (issue 19): the real binary spawns keel-mcp-test-server over stdio,
// offers its tools under keel names, and a scripted model calls one; its result reaches the model inside the
// untrusted-data envelope, and the server is shut down with keel.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "keel_process.h"
#include "model_server/model_server.h"
#include "testing/temp_dir.h"

namespace keel::e2e {
namespace {

using nlohmann::json;

class McpClientEndToEnd : public ::testing::Test {
 protected:
  void serve(json script, const std::string& server_lines,
             const std::string& command = KEEL_MCP_TEST_SERVER) {
    auto parsed = model_server::parse_script(script);
    ASSERT_TRUE(parsed) << parsed.error().to_string();
    model_server::ServerOptions options;
    options.script = std::move(*parsed);
    auto server = model_server::ModelServer::start(std::move(options));
    ASSERT_TRUE(server) << server.error().to_string();
    server_ = std::move(*server);
    std::ofstream(dir_.file("config.toml")) << "data_dir = \"" << dir_.file("data") << "\"\n"
                                            << "default_model = \"scripted\"\n"
                                            << "[providers.local]\nkind = \"openai-chat\"\nmax_retries = 0\n"
                                            << "base_url = \"" << server_->base_url() << "/v1\"\n"
                                            << "[models.scripted]\nprovider = \"local\"\n"
                                            << "[mcp.servers.srv]\ncommand = \"" << command << "\"\n"
                                            << server_lines;
  }

  KeelRun keel(std::vector<std::string> args) {
    args.insert(args.begin(), {"--config", dir_.file("config.toml")});
    return run_keel(KEEL_BINARY, args, "");
  }

  std::string request_text(size_t n) const {
    auto requests = server_->requests();
    if (n >= requests.size()) return "";
    return requests[n]["body"].dump();
  }

  testing::TempDir dir_;
  std::unique_ptr<model_server::ModelServer> server_;
};

json call_reply(const std::string& match, const std::string& tool, json arguments) {
  return {
      {"match", match},
      {"steps",
       {{{"type", "tool_calls"}, {"calls", {{{"id", "c1"}, {"name", tool}, {"arguments", arguments}}}}}}}};
}

json text_reply(const std::string& match, const std::string& text) {
  return {{"match", match}, {"steps", {{{"type", "text"}, {"text", text}}}}};
}

TEST_F(McpClientEndToEnd, AModelCallsAnMcpServersToolThroughKeel) {
  // Trusted, so the server's read-only `echo` runs without an approval.
  serve({{"responses",
          {call_reply("say it", "srv__echo", {{"text", "hello from the server"}}),
           text_reply("hello from the server", "The server said hello.")}}},
        "trusted = true\n");
  KeelRun run = keel({"run", "say it"});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("srv__echo"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("The server said hello."), std::string::npos) << run.out;
  // The model was offered the server's tools under keel names, and saw the result as data from the server.
  EXPECT_NE(request_text(0).find("srv__add"), std::string::npos) << request_text(0);
  EXPECT_NE(request_text(1).find("hello from the server"), std::string::npos) << request_text(1);
}

TEST_F(McpClientEndToEnd, AnUntrustedServersToolIsAWriteThatAsksFirst) {
  // Untrusted: `echo` claims to be read-only, but keel treats it as a write; with no terminal to ask, the
  // call is declined and the model is told so.
  serve({{"responses",
          {call_reply("say it", "srv__echo", {{"text", "should not run"}}), text_reply("", "Understood.")}}},
        "");
  KeelRun run = keel({"run", "say it"});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("declined (no terminal to ask on)"), std::string::npos) << run.err;
}

TEST_F(McpClientEndToEnd, AServerThatCannotStartLeavesKeelWorking) {
  // The configured command exists but never answers anything (it reads its input and writes nothing), so no
  // attempt, first or retried, finishes its handshake: keel warns and runs without its tools.
  serve({{"responses", {text_reply("hello", "Hi.")}}},
        "args = [\"-c\", \"exec cat > /dev/null\"]\nconnect_timeout_ms = 500\n", "/bin/sh");
  KeelRun run = keel({"run", "hello"});
  EXPECT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("Hi."), std::string::npos) << run.out;
  EXPECT_EQ(request_text(0).find("srv__"), std::string::npos) << request_text(0);
}

}  // namespace
}  // namespace keel::e2e
