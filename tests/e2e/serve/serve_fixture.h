// tests/e2e/serve/serve_fixture.h — the fixture of the `keel serve` end-to-end tests: a temporary directory
// with a workspace and a data directory, the scripted model server in this process, a configuration file
// pointing keel at it, `keel serve` processes (serve_process.h) and JSON-RPC clients on them
// (transport/rpc_test_client.h). When a test ends every message each client received is checked against
// docs/protocol/keel-protocol-v1.schema.json; then the processes still running are killed, then the clients
// go (a stdio client's reader ends with its process's stdout).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model_server/model_server.h"
#include "serve_process.h"
#include "testing/temp_dir.h"
#include "transport/rpc_test_client.h"

namespace keel::e2e {

inline constexpr char kToken[] = "e2e-token-0123456789abcdef";

// Script pieces (docs/model-server.md).
nlohmann::json text_step(const std::string& text, int chunk_size = 0);
// A response chosen by `match` (nullopt: taken in order by requests no match claims).
nlohmann::json response(std::optional<std::string> match, nlohmann::json steps, int chunk_delay_ms = 0);
// A script for tests that never ask the model (a script needs one response).
nlohmann::json unused_script();
nlohmann::json write_file_call(const std::string& id, const std::string& path, const std::string& content);

// The text of a chat-completions request's last user or tool message (what `match` looks at).
std::string last_user_text(const nlohmann::json& recorded_request);

class ServeFixture : public ::testing::Test {
 protected:
  ServeFixture();
  void TearDown() override;

  // Starts the scripted model server with `script` on `port` (0: any free one) and writes the configuration
  // pointing keel at it. Called again (after model().stop()) it replaces the server.
  void start_model(const nlohmann::json& script, uint16_t port = 0);
  model_server::ModelServer& model() { return *model_; }

  // keel --config CFG [global...] <command> [serve_args...]
  ServeProcess& spawn(const std::vector<std::string>& serve_args, const std::vector<std::string>& global = {},
                      bool stdio_pipes = false, const std::string& command = "serve");

  struct Stdio {
    ServeProcess* process = nullptr;
    testing::FdTestClient* client = nullptr;
  };
  // keel serve --stdio --workspace W [serve_args], with a client on its stdin/stdout.
  Stdio serve_stdio(const std::vector<std::string>& serve_args = {},
                    const std::vector<std::string>& global = {});

  struct Listening {
    ServeProcess* process = nullptr;
    uint16_t port = 0;
  };
  // keel serve --listen 127.0.0.1:0 --token-file --port-file --workspace W, once it listens.
  Listening serve_listen(const std::vector<std::string>& global = {});
  testing::WsTestClient& connect(uint16_t port);
  // Adopts a client so that its messages are schema-checked at the end.
  template <typename Client>
  Client& adopt(std::unique_ptr<Client> client) {
    Client& ref = *client;
    clients_.push_back(std::move(client));
    return ref;
  }

  std::string create_thread(testing::RpcTestClient& client);
  // turn.submit; the new turn's id, or "" (and a test failure) when it was refused.
  std::string submit(testing::RpcTestClient& client, const std::string& thread, const std::string& input);
  // The schema violations among what `client` received so far (one line each), and non-JSON lines.
  std::vector<std::string> protocol_violations(const testing::RpcTestClient& client);

  // Added to the next spawned processes' environment ("NAME=value"), e.g. KEEL_FAILPOINTS.
  std::vector<std::string> extra_environment_;
  testing::TempDir dir_;
  std::filesystem::path workspace_;
  std::filesystem::path data_dir_;
  std::filesystem::path config_path_;
  std::filesystem::path token_file_;
  std::filesystem::path port_file_;

 private:
  std::unique_ptr<model_server::ModelServer> model_;
  std::vector<std::unique_ptr<testing::RpcTestClient>> clients_;
  std::vector<std::unique_ptr<ServeProcess>> processes_;  // declared after the clients: they go first
};

}  // namespace keel::e2e
