// cli/engine_client.h — a blocking client of an EngineTransport for the command-line front ends.
//
// call() sends an op under a fresh submission id and waits for its answer: the ack's result, or the
// rejection as an Error with keel's code. Every event (answers included) is also queued in arrival order for
// next_event(), so a front end can render a turn on its own thread while the engine delivers on another.
//
// Thread-safe. The transport must outlive the client; the destructor stops the subscription first.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cli/cli_errors.h"
#include "keel/error.h"
#include "keel/transport.h"
#include "util/thread_annotations.h"

namespace keel::cli {

using codes::kNoAnswer;

class EngineClient {
 public:
  EngineClient(EngineTransport& transport, std::string client_id);
  ~EngineClient();
  EngineClient(const EngineClient&) = delete;
  EngineClient& operator=(const EngineClient&) = delete;

  // The op's ack result, or its rejection. client.no_answer when nothing came within `timeout`.
  Result<nlohmann::json> call(const std::string& method, nlohmann::json params,
                              std::chrono::milliseconds timeout = std::chrono::seconds(60));
  // Sends without waiting; returns the submission id its answer will carry.
  std::string send(const std::string& method, nlohmann::json params);

  // The next event, in arrival order; nullopt after `timeout` without one.
  std::optional<AgentEvent> next_event(std::chrono::milliseconds timeout);
  // Wakes a next_event() that waits (for a front end that also waits on the keyboard or a signal).
  void wake();

  const std::string& client_id() const { return client_id_; }

 private:
  void on_event(const AgentEvent& event) EXCLUDES(mu_);

  EngineTransport& transport_;
  std::string client_id_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<AgentEvent> events_ GUARDED_BY(mu_);
  std::map<std::string, AgentEvent> answers_ GUARDED_BY(mu_);  // by submission id, for call()
  uint64_t next_submission_ GUARDED_BY(mu_) = 1;
  bool woken_ GUARDED_BY(mu_) = false;
  std::unique_ptr<EventSubscription> subscription_;
};

}  // namespace keel::cli
