// model_server/main.cc — keel-model-server: the scripted model server as a program.
//
//   keel-model-server --script FILE [--port N] [--port-file FILE] [--record FILE]
//                     [--api-key-env NAME] [--max-seconds N] [--max-requests N]
//
// Prints "listening on 127.0.0.1:PORT" once it accepts connections (and writes PORT to --port-file, renamed
// into place so a reader never sees half a number). The expected API key is read from the environment
// variable named by --api-key-env, never from the command line, where `ps` would show it. Exits 0 when it
// stops on its own (time or request limit), 2 for a bad script or bad arguments, 1 when it cannot listen or
// record.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "model_server/model_server.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"keel-model-server: serves scripted model responses on 127.0.0.1"};
  std::string script_path;
  std::string port_file;
  std::string record_path;
  std::string api_key_env;
  uint16_t port = 0;
  int64_t max_seconds = 300;
  uint64_t max_requests = 0;
  app.add_option("--script", script_path, "script file (JSON; see docs/model-server.md)")->required();
  app.add_option("--port", port, "port to listen on; 0 picks a free one");
  app.add_option("--port-file", port_file, "write the port number to this file once listening");
  app.add_option("--record", record_path, "append each request received to this file as a JSON line");
  app.add_option("--api-key-env", api_key_env,
                 "environment variable holding the API key requests must carry");
  app.add_option("--max-seconds", max_seconds, "stop after this many seconds (default 300)")
      ->check(CLI::Range(1, 86400));
  app.add_option("--max-requests", max_requests, "stop after answering this many requests (0: no limit)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }

  auto script = keel::model_server::load_script(script_path);
  if (!script) {
    std::cerr << "keel-model-server: " << script.error().to_string() << "\n";
    return 2;
  }
  keel::model_server::ServerOptions options;
  options.script = std::move(*script);
  options.port = port;
  options.record_path = record_path;
  options.max_duration = std::chrono::seconds(max_seconds);
  if (max_requests > 0) options.max_requests = max_requests;
  if (!api_key_env.empty()) {
    const char* key = std::getenv(api_key_env.c_str());
    if (key == nullptr || *key == '\0') {
      std::cerr << "keel-model-server: the environment variable " << api_key_env << " is not set\n";
      return 2;
    }
    options.api_key = key;
  }

  auto server = keel::model_server::ModelServer::start(std::move(options));
  if (!server) {
    std::cerr << "keel-model-server: " << server.error().to_string() << "\n";
    return 1;
  }
  const uint16_t bound = (*server)->port();
  if (!port_file.empty()) {
    const std::string temporary = port_file + ".tmp";
    std::ofstream(temporary) << bound << "\n";
    std::error_code ec;
    std::filesystem::rename(temporary, port_file, ec);
    if (ec) {
      std::cerr << "keel-model-server: cannot write " << port_file << ": " << ec.message() << "\n";
      return 1;
    }
  }
  std::cout << "listening on 127.0.0.1:" << bound << std::endl;
  const std::string reason = (*server)->wait();
  std::cout << "stopped: " << reason << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run(argc, argv); }
