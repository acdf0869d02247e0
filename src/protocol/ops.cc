#include "protocol/ops.h"

#include <array>
#include <cstddef>

namespace keel::protocol {
namespace {

using enum OpKind;
using enum OpRoute;

// One row per op. Receipted: the ops whose repetition would repeat a change a person asked for once.
constexpr std::array kOps = {
    //      kind                       name                        receipted waiting route    store
    OpSpec{kInitialize, "initialize", false, true, kEngine, false},
    OpSpec{kThreadCreate, "thread.create", true, true, kEngine, true},
    OpSpec{kThreadDelete, "thread.delete", true, false, kThread, true},
    OpSpec{kThreadFork, "thread.fork", true, false, kThread, true},
    OpSpec{kThreadSelectBranch, "thread.selectBranch", true, false, kThread, true},
    OpSpec{kThreadSetModel, "thread.setModel", true, true, kThread, true},
    OpSpec{kThreadSetMcpServers, "thread.setMcpServers", true, true, kThread, true},
    OpSpec{kThreadList, "thread.list", false, true, kEngine, false},
    OpSpec{kThreadRead, "thread.read", false, true, kEngine, false},
    OpSpec{kThreadBranches, "thread.branches", false, true, kEngine, false},
    OpSpec{kModelList, "model.list", false, true, kEngine, false},
    OpSpec{kTurnSubmit, "turn.submit", true, false, kThread, false},
    OpSpec{kTurnInterrupt, "turn.interrupt", false, true, kThread, false},
    OpSpec{kTurnSteer, "turn.steer", true, false, kSteerGate, false},
    OpSpec{kTurnInput, "turn.input", true, true, kThread, false},
    OpSpec{kTurnEnqueue, "turn.enqueue", true, true, kThread, true},
    OpSpec{kQueueStart, "queue.start", true, false, kThread, false},
    OpSpec{kQueueUpdate, "queue.update", true, true, kThread, true},
    OpSpec{kQueueRemove, "queue.remove", true, true, kThread, true},
    OpSpec{kQueueList, "queue.list", false, true, kEngine, false},
    OpSpec{kRunResume, "run.resume", false, false, kThread, false},
    OpSpec{kRunResolveUncertain, "run.resolveUncertain", true, false, kThread, false},
    OpSpec{kApprovalResponse, "approval.response", true, true, kThread, false},
    OpSpec{kInteractionResponse, "interaction.response", true, true, kThread, false},
    OpSpec{kPolicyRead, "policy.read", false, true, kThreadOrEngine, false},
    OpSpec{kPolicySetMode, "policy.setMode", true, true, kThreadOrEngine, false},
    OpSpec{kPolicyAddRule, "policy.addRule", true, true, kThreadOrEngine, false},
    OpSpec{kPolicyRemoveRule, "policy.removeRule", true, true, kThreadOrEngine, false},
    OpSpec{kPolicySetHostPermissions, "policy.setHostPermissions", true, true, kThreadOrEngine, false},
    OpSpec{kTakeoverStart, "takeover.start", false, true, kThread, false},
    OpSpec{kTakeoverEnd, "takeover.end", false, true, kThread, false},
    OpSpec{kSessionSubscribe, "session.subscribe", false, true, kSession, false},
    OpSpec{kSessionUnsubscribe, "session.unsubscribe", false, true, kSession, false},
};

// spec_of() indexes the table by OpKind: the rows must stay in enum order.
constexpr bool in_enum_order() {
  for (size_t i = 0; i < kOps.size(); ++i) {
    if (static_cast<size_t>(kOps[i].kind) != i) return false;
  }
  return kOps.back().kind == kSessionUnsubscribe;
}
static_assert(in_enum_order(), "kOps must list every OpKind once, in enum order");

}  // namespace

std::span<const OpSpec> all_ops() { return kOps; }

const OpSpec* find_op(std::string_view name) {
  for (const OpSpec& spec : kOps) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const OpSpec& spec_of(OpKind kind) { return kOps[static_cast<size_t>(kind)]; }

std::string_view to_string(OpKind kind) { return spec_of(kind).name; }

}  // namespace keel::protocol
