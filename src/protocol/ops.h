// protocol/ops.h — the one table of keel's ops: what each is called, how it is routed and answered.
//
// Every op a client can send has one row here: its name on the wire, whether a duplicate must replay its
// first answer (receipted: the client supplies the submissionId), whether the thread accepts it while it
// waits durably for an approval or an answer (spec §3), and where the engine runs it. The engine's routing
// (src/engine/engine_core.cc), the JSON-RPC layer (src/transport/rpc_params.cc, json_rpc.cc) and the
// schema test (docs/protocol/ against this table) all read this table, so adding an op is one row, one
// OpKind, its params struct with its decoder and ParamsOf entry (op_params.h, or store_params.h for a store
// command), one `case` the compiler asks for in each of the engine's two routing switches, its handler,
// and the schema entry (then clients/ts is regenerated).
//
// The table is constant data: thread-safe, no initialisation order.
#pragma once

#include <span>
#include <string_view>

namespace keel::protocol {

enum class OpKind {
  kInitialize,
  kThreadCreate,
  kThreadDelete,
  kThreadFork,
  kThreadSelectBranch,
  kThreadSetModel,
  kThreadSetMcpServers,
  kThreadList,
  kThreadRead,
  kThreadBranches,
  kModelList,
  kTurnSubmit,
  kTurnInterrupt,
  kTurnSteer,
  kTurnInput,
  kTurnEnqueue,
  kQueueStart,
  kQueueUpdate,
  kQueueRemove,
  kQueueList,
  kRunResume,
  kRunResolveUncertain,
  kApprovalResponse,
  kInteractionResponse,
  kPolicyRead,
  kPolicySetMode,
  kPolicyAddRule,
  kPolicyRemoveRule,
  kPolicySetHostPermissions,
  kTakeoverStart,
  kTakeoverEnd,
  kSessionSubscribe,
  kSessionUnsubscribe,
};

// Where an op runs.
enum class OpRoute {
  // Engine-wide, on the engine's control strand: the op reads or creates across threads.
  kEngine,
  // On the addressed thread's actor strand (an op without a threadId is refused there as not addressed).
  kThread,
  // On the thread's actor when it names a thread, engine-wide otherwise (the policy ops).
  kThreadOrEngine,
  // At the thread's steer gate, never through the strand: a steer must not wait for the turn's writes.
  kSteerGate,
  // The transport's own: which events a connection receives; never reaches the engine.
  kSession,
};

struct OpSpec {
  OpKind kind;
  std::string_view name;
  // A duplicate submission replays its first answer, so the client must name the submission.
  bool receipted;
  // Accepted while the thread waits durably (spec §3: enqueue, interrupt, the response, policy).
  bool allowed_while_waiting;
  OpRoute route;
  // One of the store's command units (store/commands.h), run whole in one transaction with its receipt.
  bool store_command;
};

// Every op, in OpKind order.
std::span<const OpSpec> all_ops();
// The op's row; nullptr when no op has that name.
const OpSpec* find_op(std::string_view name);
const OpSpec& spec_of(OpKind kind);
std::string_view to_string(OpKind kind);

}  // namespace keel::protocol
