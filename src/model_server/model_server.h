// model_server/model_server.h — the scripted model server: an HTTP/1.1 server on 127.0.0.1 that answers
// the three model APIs from a Script, for tests, the demo and the benchmarks.
//
// Endpoints: POST /v1/chat/completions (OpenAI Chat Completions), POST /v1/responses (OpenAI Responses),
// POST /v1/messages (Anthropic Messages); streaming requests only ("stream": true). Every request is
// recorded (request_log.h) before it is answered. With an API key configured, OpenAI requests must carry
// `Authorization: Bearer <key>` and Anthropic requests `x-api-key: <key>`; others get 401 with that API's
// error body. Other failures of the request itself: 404 (unknown path), 405 (not POST), 400 (body not
// JSON, or not streaming), 500 (the script has no response left).
//
// Lifetime: start() binds and serves on its own I/O thread until stop(), the time limit, or the request
// limit (counted when a response has been fully written). Stopping closes every connection, including
// streams that hang. The destructor stops and joins. stop() and wait() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "keel/error.h"
#include "model_server/script.h"

namespace keel::model_server {

struct ServerOptions {
  Script script;
  uint16_t port = 0;                   // 0: the system picks a free port
  std::string record_path;             // "" = record in memory only
  std::optional<std::string> api_key;  // overrides script.api_key
  std::optional<std::chrono::milliseconds> max_duration;
  std::optional<uint64_t> max_requests;
  // Called on the I/O thread each time a stream write has completed (benchmarks time delivery with it).
  std::function<void()> on_stream_write;
};

class ModelServer {
 public:
  // Fails with model_server.listen_failed (port taken) or model_server.record_failed.
  static Result<std::unique_ptr<ModelServer>> start(ServerOptions options);
  ~ModelServer();
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  uint16_t port() const;
  std::string base_url() const;  // "http://127.0.0.1:PORT"
  // The requests received so far, as recorded (redacted).
  std::vector<nlohmann::json> requests() const;

  void stop();
  // Blocks until the server has stopped; returns why ("stopped", "time limit reached", "served N requests").
  std::string wait();

  class Impl;
  explicit ModelServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace keel::model_server
