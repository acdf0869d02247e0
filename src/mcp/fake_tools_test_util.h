// mcp/fake_tools_test_util.h — fake tools and a fake gatekeeper for the MCP server's tests: a tool that
// answers at once (text, image, error, progress, throws), a tool that holds each call until the test
// releases it or the call is cancelled, and a gatekeeper whose verdict the test sets.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/gatekeeper.h"
#include "keel/tool.h"
#include "keel/tool_registry.h"
#include "util/thread_annotations.h"

namespace keel::mcp::testing {

// Answers by its arguments: {"text": s} -> text s; {"image": true} -> text + a PNG block; {"fail": code}
// -> that error; {"throw": true} -> throws; {"progress": n} -> n progress reports first.
class EchoTool final : public AgentTool {
 public:
  explicit EchoTool(std::string name = "echo", ToolEffects effects = ToolEffects::kRead) {
    spec_.name = std::move(name);
    spec_.label = "Echo " + spec_.name;
    spec_.description = "Answers with what it is given.";
    spec_.effects = effects;
    spec_.parameters = nlohmann::json::parse(R"({"type":"object","properties":{
      "text":{"type":"string"},"image":{"type":"boolean"},"fail":{"type":"string"},
      "throw":{"type":"boolean"},"progress":{"type":"integer","minimum":0,"maximum":5},
      "path":{"type":"string"}},"additionalProperties":false})");
  }
  const ToolSpec& spec() const override { return spec_; }
  Result<ToolTarget> resolve_target(const nlohmann::json& params) const override {
    if (params.value("path", "") == "/unresolvable") return fail(codes::kInvalidArgument, "no such target");
    return ToolTarget{};
  }
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override {
    if (params.value("throw", false)) throw std::runtime_error("boom");
    for (int i = 0; i < params.value("progress", 0); ++i) context.progress(ToolProgress{"step", nullptr});
    if (params.contains("fail")) {
      done(fail(params["fail"].get<std::string>(), "it failed as asked"));
      return;
    }
    ToolResult result = text_result(params.value("text", "ok"));
    if (params.value("image", false)) {
      ContentBlock image;
      image.kind = ContentBlock::Kind::kImage;
      image.media_type = "image/png";
      image.data_base64 = "iVBORw0KGgo=";
      result.content.push_back(image);
    }
    done(std::move(result));
  }

 private:
  ToolSpec spec_;
};

// Holds every call until release(n) answers the n-th call (from 0) with text "released n", or its token is
// cancelled (then it answers `cancelled`). Records which calls saw their token cancelled.
class HeldTool final : public AgentTool {
 public:
  HeldTool() {
    spec_.name = "held";
    spec_.label = "Held";
    spec_.description = "Answers when the test says so.";
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, nlohmann::json,
               std::function<void(Result<ToolResult>)> done) override {
    auto slot = std::make_shared<Slot>();
    slot->done = std::move(done);
    size_t index = 0;
    {
      MutexLock lock(mu_);
      index = slots_.size();
      slots_.push_back(slot);
    }
    // Registered outside the lock: a token already cancelled runs the callback at once.
    auto registration = context.cancel.on_cancel([this, slot, index] {
      {
        MutexLock lock(mu_);
        cancelled_.push_back(index);
      }
      answer(slot, fail(codes::kCancelled, "cancelled"));
    });
    MutexLock lock(mu_);
    registrations_.push_back(std::move(registration));
    changed_.notify_all();
  }

  // Waits until `count` calls started; false after a generous bound (a hung server, not a timing).
  bool wait_started(size_t count) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (slots_.size() < count) {
      if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) break;
    }
    return slots_.size() >= count;
  }
  bool wait_cancelled(size_t index) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::find(cancelled_.begin(), cancelled_.end(), index) == cancelled_.end()) {
      if (lock.wait_until(changed_, give_up) == std::cv_status::timeout) break;
    }
    return std::find(cancelled_.begin(), cancelled_.end(), index) != cancelled_.end();
  }
  void release(size_t index) {
    std::shared_ptr<Slot> slot;
    {
      MutexLock lock(mu_);
      slot = slots_.at(index);
    }
    answer(slot, text_result("released " + std::to_string(index)));
  }

 private:
  struct Slot {
    Mutex mu;
    std::function<void(Result<ToolResult>)> done GUARDED_BY(mu);
  };
  void answer(const std::shared_ptr<Slot>& slot, Result<ToolResult> result) {
    std::function<void(Result<ToolResult>)> done;
    {
      MutexLock lock(slot->mu);
      done = std::move(slot->done);
      slot->done = nullptr;
    }
    if (done) done(std::move(result));
    MutexLock lock(mu_);
    changed_.notify_all();
  }

  ToolSpec spec_;
  Mutex mu_;
  std::condition_variable changed_;
  std::vector<std::shared_ptr<Slot>> slots_ GUARDED_BY(mu_);
  std::vector<size_t> cancelled_ GUARDED_BY(mu_);
  std::vector<CancellationRegistration> registrations_ GUARDED_BY(mu_);
};

// Returns `verdict` for every call and records the requests' tool names.
class FakeGatekeeper final : public Gatekeeper {
 public:
  GateVerdict check(const GateRequest& request) override {
    MutexLock lock(mu);
    checked.push_back(request.descriptor->name);
    return verdict;
  }
  // Set and read by the test while no call runs.
  Mutex mu;
  GateVerdict verdict;
  std::vector<std::string> checked;
};

inline std::shared_ptr<const ToolRegistryGeneration> registry_of(
    std::vector<std::shared_ptr<AgentTool>> tools) {
  ToolRegistry registry;
  for (auto& tool : tools) {
    auto registered = registry.register_tool(std::move(tool));
    if (!registered) throw std::runtime_error(registered.error().to_string());
  }
  return registry.snapshot();
}

}  // namespace keel::mcp::testing
