#include "testing/scripted_provider.h"

#include <algorithm>
#include <chrono>

#include "keel/error_codes.h"

namespace keel::testing {

namespace pe = provider_event;

// `sink` is taken under ScriptedProvider::mu_ once the stream is published (not annotated: the analysis names
// a mutex only through the object that holds it).
struct StalledStream {
  std::shared_ptr<ProviderSink> sink;
  std::vector<ScriptedStep> rest;  // a held stream: the steps after the hold
  bool complete = true;
  CancellationToken cancel;
  CancellationRegistration registration;
};

ScriptedResponse ScriptedResponse::text(std::string text, std::string provider_reason) {
  ScriptedResponse response;
  response.add(pe::TextDelta{std::move(text)});
  response.add(pe::Finish{StopReason::kEnd, std::move(provider_reason)});
  return response;
}

ScriptedResponse ScriptedResponse::tool_calls(std::vector<Call> calls, std::string text) {
  ScriptedResponse response;
  if (!text.empty()) response.add(pe::TextDelta{std::move(text)});
  int index = 0;
  for (Call& call : calls) {
    response.add(pe::ToolCallStart{index, std::move(call.id), std::move(call.name)});
    response.add(pe::ToolCallDelta{index, std::move(call.arguments)});
    response.add(pe::ToolCallEnd{index});
    ++index;
  }
  response.add(pe::Finish{StopReason::kToolUse, "tool_calls"});
  return response;
}

ScriptedResponse ScriptedResponse::stall() {
  ScriptedResponse response;
  response.steps.push_back({ScriptedStep::Kind::kStallUntilCancelled, pe::TextDelta{}, std::nullopt});
  return response;
}

ScriptedResponse ScriptedResponse::held(ScriptedResponse then) {
  then.steps.insert(then.steps.begin(),
                    ScriptedStep{ScriptedStep::Kind::kHoldUntilReleased, pe::TextDelta{}, std::nullopt});
  return then;
}

ScriptedResponse ScriptedResponse::failure(Error error) {
  ScriptedResponse response;
  response.steps.push_back({ScriptedStep::Kind::kFail, pe::TextDelta{}, std::move(error)});
  return response;
}

ScriptedResponse& ScriptedResponse::add(ProviderEvent event) {
  steps.push_back({ScriptedStep::Kind::kEvent, std::move(event), std::nullopt});
  return *this;
}

ScriptedResponse& ScriptedResponse::with_usage(int64_t input_tokens, int64_t output_tokens) {
  ScriptedStep usage{
      ScriptedStep::Kind::kEvent, pe::Usage{TokenUsage{input_tokens, output_tokens, 0, 0}}, {}};
  // Usage goes before Finish, where providers put it.
  auto finish = std::find_if(steps.begin(), steps.end(), [](const ScriptedStep& step) {
    return step.kind == ScriptedStep::Kind::kEvent && std::holds_alternative<pe::Finish>(step.event);
  });
  steps.insert(finish, std::move(usage));
  return *this;
}

ScriptedProvider::ScriptedProvider(std::vector<ScriptedResponse> script)
    : script_(std::make_move_iterator(script.begin()), std::make_move_iterator(script.end())) {}

void ScriptedProvider::push(ScriptedResponse response) {
  MutexLock guard(mu_);
  script_.push_back(std::move(response));
}

void ScriptedProvider::set_recording(bool on) {
  MutexLock guard(mu_);
  recording_ = on;
}

std::vector<RecordedRequest> ScriptedProvider::requests() const {
  MutexLock guard(mu_);
  return requests_;
}

size_t ScriptedProvider::remaining() const {
  MutexLock guard(mu_);
  return script_.size();
}

void ScriptedProvider::stream(ProviderRequest request, CancellationToken cancel,
                              std::shared_ptr<ProviderSink> sink) {
  std::optional<ScriptedResponse> response;
  {
    MutexLock guard(mu_);
    if (recording_) {
      requests_.push_back(
          RecordedRequest{request.model, request.system_prompt,
                          std::vector<Message>(request.messages.begin(), request.messages.end()),
                          request.tools, request.max_output_tokens});
    }
    if (!script_.empty()) {
      response = std::move(script_.front());
      script_.pop_front();
    }
  }
  if (!response) {
    sink->on_done(fail("provider.script_exhausted", "the scripted provider has no response left"));
    return;
  }
  play(std::move(response->steps), 0, response->complete, std::move(cancel), std::move(sink));
}

void ScriptedProvider::play(std::vector<ScriptedStep> steps, size_t first, bool complete,
                            CancellationToken cancel, std::shared_ptr<ProviderSink> sink) {
  for (size_t i = first; i < steps.size(); ++i) {
    ScriptedStep& step = steps[i];
    if (cancel.is_cancelled()) {
      sink->on_done(fail(codes::kCancelled, "the request was cancelled"));
      return;
    }
    switch (step.kind) {
      case ScriptedStep::Kind::kEvent:
        sink->on_event(step.event);
        break;
      case ScriptedStep::Kind::kFail:
        sink->on_done(fail(*step.failure));
        return;
      case ScriptedStep::Kind::kStallUntilCancelled:
      case ScriptedStep::Kind::kHoldUntilReleased: {
        // Nothing more happens until the request is cancelled (or, when held, released); a cancelled
        // request ends as a cancelled request would.
        auto stalled = std::make_shared<StalledStream>();
        stalled->sink = sink;
        stalled->cancel = cancel;
        stalled->complete = complete;
        if (step.kind == ScriptedStep::Kind::kHoldUntilReleased) {
          stalled->rest.assign(std::make_move_iterator(steps.begin() + static_cast<std::ptrdiff_t>(i) + 1),
                               std::make_move_iterator(steps.end()));
        }
        std::weak_ptr<StalledStream> weak = stalled;
        {
          MutexLock guard(mu_);
          if (step.kind == ScriptedStep::Kind::kHoldUntilReleased) {
            held_.push_back(stalled);
          } else {
            stalled_.push_back(stalled);
          }
        }
        held_cv_.notify_all();
        // The sink is released as soon as the stream ends, so nothing of the engine (its inbox, its
        // strand) outlives the request inside this provider.
        stalled->registration = cancel.on_cancel([this, weak] {
          auto s = weak.lock();
          if (!s) return;
          std::shared_ptr<ProviderSink> ending;
          {
            MutexLock guard(mu_);
            ending = std::move(s->sink);
            std::erase(held_, s);
          }
          if (ending) ending->on_done(fail(codes::kCancelled, "the request was cancelled"));
        });
        return;
      }
    }
  }
  if (complete) sink->on_done({});
}

bool ScriptedProvider::release() {
  std::shared_ptr<StalledStream> stream;
  std::shared_ptr<ProviderSink> sink;
  {
    MutexLock guard(mu_);
    if (held_.empty()) return false;
    stream = std::move(held_.front());
    held_.pop_front();
    sink = std::move(stream->sink);
  }
  if (!sink) return false;  // cancelled meanwhile
  play(std::move(stream->rest), 0, stream->complete, stream->cancel, std::move(sink));
  return true;
}

size_t ScriptedProvider::held() const {
  MutexLock guard(mu_);
  return held_.size();
}

bool ScriptedProvider::wait_held(size_t count) const {
  MutexLock lock(mu_);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (held_.size() < count) {
    if (lock.wait_until(held_cv_, give_up) == std::cv_status::timeout) return held_.size() >= count;
  }
  return true;
}

}  // namespace keel::testing
