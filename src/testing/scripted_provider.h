// testing/scripted_provider.h — a Provider that plays back scripted responses, for tests and benchmarks.
//
// Each call to stream() takes the next ScriptedResponse from the script (in order) and records the
// request. A response is a list of steps: provider events to emit, a stall that waits until the request
// is cancelled, or a failure. Events are delivered synchronously inside stream() unless a step stalls, in
// which case the rest is delivered from the cancelling thread. A response may be deliberately malformed
// (events after Finish, no Finish at all, deltas for an unknown index): the engine must cope.
// When the script runs out, stream() fails with provider.script_exhausted. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "keel/provider.h"
#include "util/thread_annotations.h"

namespace keel::testing {

struct ScriptedStep {
  // kHoldUntilReleased: the rest of the response waits until the test calls release() (which delivers it
  // from the test's thread) or the request is cancelled (which ends it cancelled).
  enum class Kind { kEvent, kStallUntilCancelled, kFail, kHoldUntilReleased };
  Kind kind = Kind::kEvent;
  ProviderEvent event;           // kEvent
  std::optional<Error> failure;  // kFail
};

struct ScriptedResponse {
  std::vector<ScriptedStep> steps;
  // When true (the default), on_done(success) follows the last step unless a step failed or stalled.
  bool complete = true;

  // Builders for the common shapes.
  static ScriptedResponse text(std::string text, std::string provider_reason = "stop");
  // One assistant message with `calls` (id, name, arguments JSON text) and stop reason tool_use.
  struct Call {
    std::string id;
    std::string name;
    std::string arguments;
  };
  static ScriptedResponse tool_calls(std::vector<Call> calls, std::string text = "");
  static ScriptedResponse stall();
  // `then`, held before its first step until release().
  static ScriptedResponse held(ScriptedResponse then);
  static ScriptedResponse failure(Error error);

  ScriptedResponse& add(ProviderEvent event);
  ScriptedResponse& with_usage(int64_t input_tokens, int64_t output_tokens);
};

// A request as the scripted provider received it, with its messages copied.
struct RecordedRequest {
  std::string model;
  std::string system_prompt;
  std::vector<Message> messages;
  std::vector<ProviderTool> tools;
  std::optional<int64_t> max_output_tokens;
};

class ScriptedProvider final : public Provider {
 public:
  ScriptedProvider() = default;
  explicit ScriptedProvider(std::vector<ScriptedResponse> script);

  void push(ScriptedResponse response);
  std::string name() const override { return "scripted"; }
  void stream(ProviderRequest request, CancellationToken cancel, std::shared_ptr<ProviderSink> sink) override;

  std::vector<RecordedRequest> requests() const;
  size_t remaining() const;
  // Recording copies every request's messages; benchmarks turn it off to measure the engine alone.
  void set_recording(bool on);
  // Delivers the rest of the oldest held response on the calling thread. False when none is held.
  bool release();
  // How many streams are held now (waiting for release()).
  size_t held() const;
  // Waits (up to 10 s) until at least `count` streams are held; false on timeout.
  bool wait_held(size_t count) const;

 private:
  mutable Mutex mu_;
  std::deque<ScriptedResponse> script_ GUARDED_BY(mu_);
  std::vector<RecordedRequest> requests_ GUARDED_BY(mu_);
  bool recording_ GUARDED_BY(mu_) = true;
  // Registrations of stalled streams, kept until their cancellation fires.
  std::vector<std::shared_ptr<struct StalledStream>> stalled_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<struct StalledStream>> held_ GUARDED_BY(mu_);
  mutable std::condition_variable held_cv_;

  // Plays response steps from `first` on; returns when the response ended, stalled or is held.
  void play(std::vector<ScriptedStep> steps, size_t first, bool complete, CancellationToken cancel,
            std::shared_ptr<ProviderSink> sink);
};

}  // namespace keel::testing
