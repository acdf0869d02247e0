// tests/e2e/serve/serve_fixture.cc — see serve_fixture.h.
#include "serve_fixture.h"

#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "transport/protocol_schema.h"

namespace keel::e2e {

namespace fs = std::filesystem;
using nlohmann::json;

json text_step(const std::string& text, int chunk_size) {
  json step = {{"type", "text"}, {"text", text}};
  if (chunk_size > 0) step["chunk_size"] = chunk_size;
  return step;
}

json response(std::optional<std::string> match, json steps, int chunk_delay_ms) {
  json out = {{"steps", std::move(steps)}};
  if (match) out["match"] = *match;
  if (chunk_delay_ms > 0) out["chunk_delay_ms"] = chunk_delay_ms;
  return out;
}

json unused_script() {
  return {{"responses", json::array({response("[never asked]", json::array({text_step("unused")}))})}};
}

json write_file_call(const std::string& id, const std::string& path, const std::string& content) {
  return {
      {"type", "tool_calls"},
      {"calls",
       json::array(
           {{{"id", id}, {"name", "write_file"}, {"arguments", {{"path", path}, {"content", content}}}}})}};
}

std::string last_user_text(const json& recorded_request) {
  const json& messages = recorded_request["body"].value("messages", json::array());
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    const std::string role = it->value("role", "");
    if (role != "user" && role != "tool") continue;
    const json& content = (*it)["content"];
    if (content.is_string()) return content.get<std::string>();
    std::string text;
    for (const json& part : content) text += part.value("text", "");
    return text;
  }
  return "";
}

ServeFixture::ServeFixture()
    : workspace_(dir_.path() / "workspace"),
      data_dir_(dir_.path() / "data"),
      config_path_(dir_.path() / "keel.toml"),
      token_file_(dir_.path() / "token"),
      port_file_(dir_.path() / "port") {
  fs::create_directories(workspace_);
  fs::create_directories(dir_.path() / "home");
  std::ofstream(token_file_) << kToken << "\n";
  ::chmod(token_file_.c_str(), 0600);
}

void ServeFixture::TearDown() {
  for (const auto& client : clients_) {
    for (const std::string& violation : protocol_violations(*client)) ADD_FAILURE() << violation;
  }
  processes_.clear();
  clients_.clear();
  if (model_) model_->stop();
}

void ServeFixture::start_model(const json& script, uint16_t port) {
  auto parsed = model_server::parse_script(script);
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  model_server::ServerOptions options;
  options.script = std::move(*parsed);
  options.port = port;
  options.max_duration = std::chrono::minutes(10);  // a hang guard: the server always stops on its own
  model_.reset();
  auto started = model_server::ModelServer::start(std::move(options));
  ASSERT_TRUE(started) << started.error().to_string();
  model_ = std::move(*started);
  // Retries are generous: the restart test swaps the model server under a waiting request.
  std::ofstream(config_path_) << "data_dir = \"" << data_dir_.string() << "\"\n"
                              << "default_model = \"scripted\"\n"
                              << "[providers.local]\n"
                              << "kind = \"openai-chat\"\n"
                              << "base_url = \"" << model_->base_url() << "/v1\"\n"
                              << "max_retries = 10\n"
                              << "[models.scripted]\n"
                              << "provider = \"local\"\n";
}

ServeProcess& ServeFixture::spawn(const std::vector<std::string>& serve_args,
                                  const std::vector<std::string>& global, bool stdio_pipes,
                                  const std::string& command) {
  std::vector<std::string> args = {"--config", config_path_.string()};
  args.insert(args.end(), global.begin(), global.end());
  args.push_back(command);
  args.insert(args.end(), serve_args.begin(), serve_args.end());
  processes_.push_back(std::make_unique<ServeProcess>(KEEL_BINARY, args, stdio_pipes, dir_.path() / "home",
                                                      extra_environment_));
  return *processes_.back();
}

ServeFixture::Stdio ServeFixture::serve_stdio(const std::vector<std::string>& serve_args,
                                              const std::vector<std::string>& global) {
  std::vector<std::string> args = {"--stdio", "--workspace", workspace_.string()};
  args.insert(args.end(), serve_args.begin(), serve_args.end());
  ServeProcess& process = spawn(args, global, /*stdio_pipes=*/true);
  Stdio out;
  out.process = &process;
  const int read_fd = process.take_stdout_fd();
  const int write_fd = process.take_stdin_fd();
  if (read_fd < 0 || write_fd < 0) {
    ADD_FAILURE() << "keel serve --stdio did not start";
    return out;
  }
  out.client = &adopt(std::make_unique<testing::FdTestClient>(read_fd, write_fd));
  return out;
}

ServeFixture::Listening ServeFixture::serve_listen(const std::vector<std::string>& global) {
  fs::remove(port_file_);
  ServeProcess& process = spawn({"--listen", "127.0.0.1:0", "--token-file", token_file_.string(),
                                 "--port-file", port_file_.string(), "--workspace", workspace_.string()},
                                global);
  Listening out;
  out.process = &process;
  // serve writes the port file, then says where it listens: once the line is there, so is the file.
  const std::regex listening("keel: listening on ws://127\\.0\\.0\\.1:([0-9]+)/\n");
  std::smatch found;
  const bool started =
      process.wait_stderr([&](const std::string& err) { return std::regex_search(err, listening); });
  const std::string err = process.err();
  if (!started || !std::regex_search(err, found, listening)) {
    ADD_FAILURE() << "keel serve --listen did not start; stderr:\n" << err;
    return out;
  }
  out.port = static_cast<uint16_t>(std::stoi(found[1].str()));
  std::ifstream port_file(port_file_);
  int written = 0;
  port_file >> written;
  EXPECT_EQ(written, out.port) << "the port file and the printed address disagree";
  return out;
}

testing::WsTestClient& ServeFixture::connect(uint16_t port) {
  return adopt(std::make_unique<testing::WsTestClient>(port, kToken));
}

std::string ServeFixture::create_thread(testing::RpcTestClient& client) {
  auto created = client.command("thread.create", {{"title", "e2e"}});
  EXPECT_TRUE(created.contains("result")) << created.dump();
  return created.contains("result") ? created["result"].value("threadId", "") : "";
}

std::string ServeFixture::submit(testing::RpcTestClient& client, const std::string& thread,
                                 const std::string& input) {
  auto submitted = client.command("turn.submit", {{"threadId", thread}, {"input", input}});
  EXPECT_TRUE(submitted.contains("result")) << submitted.dump();
  return submitted.contains("result") ? submitted["result"].value("turnId", "") : "";
}

std::vector<std::string> ServeFixture::protocol_violations(const testing::RpcTestClient& client) {
  std::vector<std::string> out;
  for (const std::string& line : client.unparsable()) out.push_back("not JSON: " + line.substr(0, 200));
  auto schema = testing::ProtocolSchema::load();
  if (!schema) {
    out.push_back(schema.error().to_string());
    return out;
  }
  for (const std::string& violation : schema->check_server_messages(client.received(), client.methods())) {
    out.push_back("schema: " + violation);
  }
  return out;
}

}  // namespace keel::e2e
