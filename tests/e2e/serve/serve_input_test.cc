// keel serve against hostile or careless input, through the binary (issue 14, points 2, 3, 10, 11): null
// optional parameters, deep nesting, a wrong enum value retried under the same submission id, and an input
// that ends right after its requests. The process must answer each and live on (or, at the end of its input,
// answer first and then exit 0). Every message is checked against the protocol schema (serve_fixture.h).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "serve_fixture.h"
#include "testing/child_process.h"

namespace keel::e2e {
namespace {

using nlohmann::json;

using ServeInputTest = ServeFixture;

TEST_F(ServeInputTest, NullOptionalParametersAreAbsentAndTheServerLives) {
  start_model(unused_script());
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  // The 75-byte request of the issue, byte for byte.
  client->send_raw(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"subscribe":null}})");
  EXPECT_TRUE(client->wait_response(1).contains("result"));
  auto interrupt = client->request("turn.interrupt", {{"threadId", thread}, {"turnId", nullptr}});
  EXPECT_EQ(interrupt["result"]["interrupted"], false) << interrupt.dump();
  auto resume = client->request("run.resume", {{"threadId", thread}, {"runId", nullptr}});
  EXPECT_EQ(resume["error"]["data"]["code"], "run.not_found") << resume.dump();
  EXPECT_TRUE(process->running());
}

TEST_F(ServeInputTest, NullOptionalParameterOfOneWebSocketClientLeavesTheOtherClientsSession) {
  start_model(unused_script());
  // Over WebSocket one client's request used to end every client's session.
  auto [ws_process, port] = serve_listen();
  ASSERT_NE(port, 0);
  testing::WsTestClient& first = connect(port);
  testing::WsTestClient& second = connect(port);
  first.send_raw(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"subscribe":null}})");
  EXPECT_TRUE(first.wait_response(1).contains("result"));
  EXPECT_TRUE(second.request("thread.list").contains("result"));
  EXPECT_TRUE(ws_process->running());
}

TEST_F(ServeInputTest, DeeplyNestedParamsAreRefusedWithJsonTooDeepAndTheServerLives) {
  start_model(unused_script());
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  // 100,000 nested objects: about 600 KB, well under the 4 MiB message bound. It used to be a SIGSEGV.
  std::string nested;
  for (int i = 0; i < 100000; ++i) nested += R"({"a":)";
  nested += "1" + std::string(100000, '}');
  client->send_raw(
      R"({"jsonrpc":"2.0","id":1,"method":"thread.create","params":{"submissionId":"deep","x":)" + nested +
      "}}");
  EXPECT_TRUE(client->wait_until([](const std::vector<json>& all) {
    for (const json& m : all) {
      if (m.is_object() && m.contains("error") && m["error"]["data"].value("code", "") == "json.too_deep")
        return true;
    }
    return false;
  }));
  EXPECT_TRUE(process->running());
  EXPECT_TRUE(client->request("thread.list").contains("result"));
}

TEST_F(ServeInputTest, WrongEnumValueIsRefusedBeforeItsReceiptSoTheCorrectedRetrySucceeds) {
  const std::string content = "approved\n";
  start_model({{"responses",
                json::array({response("[write]", json::array({write_file_call("call_w", "a.txt", content)})),
                             response(std::nullopt, json::array({text_step("Done.")}))})}});
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  const std::string thread = create_thread(*client);
  ASSERT_FALSE(submit(*client, thread, "[write] write it").empty());
  auto request = client->wait_event(thread, "approval.request");
  json params = {{"threadId", thread},
                 {"approvalId", request["payload"]["approvalId"]},
                 {"decision", "Accept"},
                 {"submissionId", "approve-1"}};
  auto wrong = client->request("approval.response", params);
  EXPECT_EQ(wrong["error"]["code"], -32602) << wrong.dump();
  EXPECT_EQ(wrong["error"]["data"]["code"], "rpc.invalid_params");
  // The same submission id with the value corrected: nothing was recorded under it, so it is accepted.
  params["decision"] = "accept";
  auto corrected = client->request("approval.response", params);
  ASSERT_TRUE(corrected.contains("result")) << corrected.dump();
  EXPECT_EQ(corrected["result"]["decision"], "accept");
  EXPECT_EQ(client->wait_event(thread, "turn.complete")["payload"]["stopReason"], "end");
}

TEST_F(ServeInputTest, RequestsBeforeTheEndOfInputAreAnsweredBeforeServeExits) {
  start_model(unused_script());
  auto [process, client] = serve_stdio();
  ASSERT_NE(client, nullptr);
  // `echo '{...initialize...}' | keel serve --stdio`: the request, then at once the end of the input.
  client->send_raw(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})"
                   "\n"
                   R"({"jsonrpc":"2.0","id":2,"method":"thread.create","params":{"submissionId":"t1"}})");
  client->disconnect();
  EXPECT_EQ(process->wait_exit(), 0) << process->err();
  ASSERT_TRUE(client->wait_closed());
  bool initialized = false;
  bool created = false;
  for (const json& message : client->received()) {
    if (!message.is_object() || !message.contains("id")) continue;
    initialized = initialized || (message["id"] == 1 && message.contains("result"));
    created = created || (message["id"] == 2 && message.contains("result"));
  }
  EXPECT_TRUE(initialized) << "no answer to initialize; stderr: " << process->err();
  EXPECT_TRUE(created) << "no answer to thread.create";
}

// Issue 14, point 15: keel serve --stdio set O_NONBLOCK on its stdout and left it so. The flag belongs to the
// open file description, which the parent shares (here: the test keeps the pipe's write end open), so the
// parent's next blocking write would fail with EAGAIN.
TEST_F(ServeInputTest, ServeGivesItsStdinAndStdoutTheirFlagsBackAtExit) {
  start_model(unused_script());
  int in[2] = {-1, -1};
  int out[2] = {-1, -1};
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  const int in_flags = ::fcntl(in[0], F_GETFL);
  const int out_flags = ::fcntl(out[1], F_GETFL);
  ASSERT_EQ(out_flags & O_NONBLOCK, 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  auto pid = testing::spawn_child_with_environment(
      KEEL_BINARY,
      {"--config", config_path_.string(), "serve", "--stdio", "--workspace", workspace_.string()},
      testing::isolated_environment(dir_.path() / "home"), &actions);
  posix_spawn_file_actions_destroy(&actions);
  ASSERT_TRUE(pid) << pid.error().to_string();
  const std::string request = std::string(R"({"jsonrpc":"2.0","id":1,"method":"thread.list"})") + "\n";
  ASSERT_EQ(::write(in[1], request.data(), request.size()), static_cast<ssize_t>(request.size()));
  ::close(in[1]);  // the end of keel's input: it answers, then exits
  int status = 0;
  ASSERT_EQ(::waitpid(*pid, &status, 0), *pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // in[0] and out[1] are still open here: the same open file descriptions keel had as stdin and stdout.
  EXPECT_EQ(::fcntl(in[0], F_GETFL), in_flags);
  EXPECT_EQ(::fcntl(out[1], F_GETFL), out_flags) << "keel left its stdout O_NONBLOCK";
  ::close(out[1]);
  std::string output;
  char chunk[4096];
  ssize_t n = 0;
  while ((n = ::read(out[0], chunk, sizeof chunk)) > 0) output.append(chunk, static_cast<size_t>(n));
  EXPECT_NE(output.find(R"("id":1)"), std::string::npos) << output;
  ::close(in[0]);
  ::close(out[0]);
}

// Issue 14, point 21: the documented clientId of the stdio client (docs/protocol.md) is the one its ops
// carry.
TEST_F(ServeInputTest, StdioClientsOpsCarryTheDocumentedClientId) {
  start_model(unused_script());
  auto [process, client] = serve_stdio({}, {"--log-level", "debug"});
  ASSERT_NE(client, nullptr);
  create_thread(*client);
  EXPECT_TRUE(process->wait_stderr("thread.create from stdio-1 accepted")) << process->err();
}

}  // namespace
}  // namespace keel::e2e
