// engine/policy_ops.h — the policy ops (docs/policy.md): policy.read, and policy.setMode / addRule /
// removeRule / setHostPermissions, each a command unit: the gatekeeper writes the change in the op's
// command transaction (with its receipt), the change is installed after the commit, then the op is answered
// and policy.updated published. A duplicate submission replays its answer and installs nothing.
//
// On the control strand (engine-wide) or the thread's strand (when the op names a thread). The context's
// members must outlive PolicyOps.
#pragma once

#include <string>

#include "engine/engine_replies.h"
#include "keel/clock.h"
#include "keel/protocol.h"
#include "keel/store.h"
#include "policy/gatekeeper.h"
#include "protocol/op_params.h"

namespace keel {

struct PolicyOpsContext {
  Store& store;
  const Clock& clock;
  Gatekeeper& gatekeeper;
  EngineReplies& replies;
};

class PolicyOps {
 public:
  explicit PolicyOps(PolicyOpsContext context) : c_(context) {}
  // Answers policy.read `op`; `thread_id` is "" for an engine-wide one.
  void read(const std::string& thread_id, const Op& op);
  // Answers `op`, one of policy.setMode, addRule, removeRule, setHostPermissions, whose change `params`
  // carries; `thread_id` as read()'s.
  void change(const std::string& thread_id, const Op& op, const protocol::PolicyChangeParams& params);

 private:
  PolicyOpsContext c_;
};

}  // namespace keel
