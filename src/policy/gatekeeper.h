// policy/gatekeeper.h — the seam every tool call passes before it runs (spec §2, §5).
//
// The engine asks check() for each call, after the arguments validated and the target was resolved, and
// acts on the verdict: kAllow runs the call; kDeny gives the model a tool_result saying it was refused
// (a refusal is not a tool failure). The approvals issue adds "ask" (a durable approval request) behind
// this same seam, with per-origin rules and policy modes; until then keel ships AllowAllGatekeeper and a
// ReadOnlyGatekeeper that refuses every write.
//
// check() runs on the thread's actor and must not block.
#pragma once

#include <string>

#include "keel/tool.h"
#include "keel/tool_registry.h"

namespace keel {

struct GateRequest {
  std::string thread_id;
  std::string tool_call_id;
  const ToolDescriptor* descriptor = nullptr;  // never null; valid during check()
  const nlohmann::json* arguments = nullptr;   // never null; valid during check()
  ToolTarget target;
};

struct GateVerdict {
  enum class Kind { kAllow, kDeny };
  Kind kind = Kind::kAllow;
  std::string reason;  // for kDeny: told to the model and the user
};

class Gatekeeper {
 public:
  virtual ~Gatekeeper() = default;
  virtual GateVerdict check(const GateRequest& request) = 0;
};

class AllowAllGatekeeper final : public Gatekeeper {
 public:
  GateVerdict check(const GateRequest&) override { return {}; }
};

// Allows reads and refuses every tool whose effects are `write`.
class ReadOnlyGatekeeper final : public Gatekeeper {
 public:
  GateVerdict check(const GateRequest& request) override {
    if (request.descriptor->effects == ToolEffects::kWrite) {
      return {GateVerdict::Kind::kDeny, "the thread's policy is read-only; " + request.descriptor->name +
                                            " writes and was not run"};
    }
    return {};
  }
};

}  // namespace keel
