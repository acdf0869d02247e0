#include "cli/engine_client.h"

#include <unistd.h>

namespace keel::cli {

EngineClient::EngineClient(EngineTransport& transport, std::string client_id)
    : transport_(transport), client_id_(std::move(client_id)) {
  subscription_ = transport_.on_event([this](const AgentEvent& event) { on_event(event); });
}

EngineClient::~EngineClient() {
  if (subscription_) subscription_->cancel();
}

void EngineClient::on_event(const AgentEvent& event) {
  MutexLock guard(mu_);
  const bool answer = event.type == "command.ack" || event.type == "command.rejected";
  if (answer && event.payload.value("clientId", "") == client_id_) {
    answers_[event.payload.value("submissionId", "")] = event;
  }
  events_.push_back(event);
  cv_.notify_all();
}

std::string EngineClient::send(const std::string& method, nlohmann::json params) {
  std::string submission;
  {
    MutexLock guard(mu_);
    // Unique per process and start: a submission id is a receipt key, never to be reused by accident.
    submission = client_id_ + "-" + std::to_string(::getpid()) + "-" +
                 std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "-" +
                 std::to_string(next_submission_++);
  }
  transport_.send(Op{
      .method = method, .client_id = client_id_, .submission_id = submission, .params = std::move(params)});
  return submission;
}

Result<nlohmann::json> EngineClient::call(const std::string& method, nlohmann::json params,
                                          std::chrono::milliseconds timeout) {
  const std::string submission = send(method, std::move(params));
  MutexLock lock(mu_);
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (!answers_.contains(submission)) {
    if (lock.wait_until(cv_, give_up) == std::cv_status::timeout) break;
  }
  if (!answers_.contains(submission)) return fail(kNoAnswer, method + " got no answer");
  AgentEvent answer = std::move(answers_.at(submission));
  answers_.erase(submission);
  if (answer.type == "command.ack") return answer.payload.value("result", nlohmann::json::object());
  const nlohmann::json& error = answer.payload["error"];
  return fail(error.value("code", "unknown"), error.value("message", ""));
}

std::optional<AgentEvent> EngineClient::next_event(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  while (events_.empty() && !woken_) {
    if (lock.wait_until(cv_, give_up) == std::cv_status::timeout) break;
  }
  woken_ = false;
  if (events_.empty()) return std::nullopt;
  AgentEvent event = std::move(events_.front());
  events_.pop_front();
  return event;
}

void EngineClient::wake() {
  MutexLock guard(mu_);
  woken_ = true;
  cv_.notify_all();
}

}  // namespace keel::cli
