// keel/error_codes.h — every stable error code keel emits, in one place.
//
// Codes are part of the public contract (clients match on them). Never rename or reuse one; add new
// ones. The naming scheme is "<area>.<condition>".
#pragma once

namespace keel::codes {

// Generic
inline constexpr char kInvalidArgument[] = "invalid_argument";
inline constexpr char kInternal[] = "internal";
inline constexpr char kCancelled[] = "cancelled";

// util/json
inline constexpr char kJsonParse[] = "json.parse";
inline constexpr char kJsonInvalidUtf8[] = "json.invalid_utf8";
inline constexpr char kJsonNonFinite[] = "json.non_finite_number";
inline constexpr char kJsonTooDeep[] = "json.too_deep";

// store
inline constexpr char kStoreOpen[] = "store.open_failed";
inline constexpr char kStoreCorrupt[] = "store.corrupt";
inline constexpr char kStoreForeign[] = "store.foreign_database";
inline constexpr char kStoreSchemaTooNew[] = "store.schema_too_new";
inline constexpr char kStoreMigration[] = "store.migration_failed";
inline constexpr char kStoreBusy[] = "store.busy";
inline constexpr char kStoreFull[] = "store.disk_full";
inline constexpr char kStoreIo[] = "store.io_error";
inline constexpr char kStoreReadOnly[] = "store.read_only";
inline constexpr char kStoreConstraint[] = "store.constraint";
inline constexpr char kStoreSql[] = "store.sql_error";
inline constexpr char kStorePoisoned[] = "store.poisoned";
inline constexpr char kStoreNestedTransaction[] = "store.nested_transaction";
inline constexpr char kStoreTransactionClosed[] = "store.transaction_closed";
inline constexpr char kStoreWriteInReadTransaction[] = "store.write_in_read_transaction";
inline constexpr char kStorePayloadTooLarge[] = "store.payload_too_large";
inline constexpr char kStoreDecode[] = "store.decode_failed";
inline constexpr char kFailPoint[] = "failpoint.triggered";

// domain records
inline constexpr char kThreadNotFound[] = "thread.not_found";
inline constexpr char kThreadDeleted[] = "thread.deleted";
inline constexpr char kNodeNotFound[] = "node.not_found";
inline constexpr char kNodeNotInThread[] = "node.not_in_thread";
inline constexpr char kNodeNotLeaf[] = "node.not_a_leaf";
inline constexpr char kContextStale[] = "context.stale";
inline constexpr char kRevisionConflict[] = "revision.conflict";
inline constexpr char kRunNotFound[] = "run.not_found";
inline constexpr char kQueueFull[] = "queue.full";
inline constexpr char kQueueItemNotFound[] = "queue.item_not_found";
inline constexpr char kSteerNotFound[] = "steer.not_found";
inline constexpr char kApprovalNotFound[] = "approval.not_found";
inline constexpr char kInteractionNotFound[] = "interaction.not_found";
inline constexpr char kSnapshotNotFound[] = "snapshot.not_found";
inline constexpr char kRunInvalidTransition[] = "run.invalid_transition";
inline constexpr char kRunNotSteerable[] = "run.not_steerable";
inline constexpr char kSteerIdConflict[] = "steer.id_conflict";
inline constexpr char kSteerAlreadyMaterialized[] = "steer.already_materialized";
inline constexpr char kToolCallNotFound[] = "tool_call.not_found";
inline constexpr char kToolCallInvalidTransition[] = "tool_call.invalid_transition";
inline constexpr char kInteractionNotAnswered[] = "interaction.not_answered";
inline constexpr char kInteractionAlreadyClaimed[] = "interaction.already_claimed";

// tool calls (results the model sees, in a tool_result's details.code)
// search_files: a pattern RE2 refuses (bad syntax, or a compiled program over its memory bound).
inline constexpr char kToolInvalidRegex[] = "tool.invalid_regex";
// The call ran past its time budget (EngineOptions::tool_time_budget); its cancellation fired.
inline constexpr char kToolTimedOut[] = "tool.timed_out";
// Recovery did not run a retry-safe call again: earlier runs of it ended with the process dying.
inline constexpr char kToolNotRetried[] = "tool.not_retried";

// command receipts (spec §5.1)
inline constexpr char kSubmissionConflict[] = "command.submission_conflict";
inline constexpr char kInvalidCommand[] = "invalid_command";

// policy: the Gatekeeper, site rules, host permissions, approvals (spec §2, §6.1)
inline constexpr char kPolicyUnsupported[] = "policy.unsupported";
inline constexpr char kPolicyBadOrigin[] = "policy.bad_origin";
inline constexpr char kPolicyBadRule[] = "policy.bad_rule";
inline constexpr char kPolicyBadMode[] = "policy.bad_mode";
inline constexpr char kPolicyNoSite[] = "policy.no_site";
inline constexpr char kPolicyRuleNotFound[] = "policy.rule_not_found";

// engine: what a turn cannot store (issue 14; docs/protocol.md, Events)
// A reply larger than a turn keeps: the turn ends with it, no call of the reply runs.
inline constexpr char kProviderReplyTooLarge[] = "provider.reply_too_large";
// A call's arguments larger than a call may carry: its result, the call does not run.
inline constexpr char kToolArgumentsTooLarge[] = "tool.arguments_too_large";
// A turn of the thread could not record its end, not even as failed: the thread refuses new work until a
// restart recovers the run.
inline constexpr char kTurnToolsDisabled[] = "turn.tools_disabled";
inline constexpr char kTurnUnpersisted[] = "turn.unpersisted";

// files on disk (issue 15, points 7 and 8; docs/security.md, Files on disk)
// A warning, not a refusal: the store, its -wal or -shm, or its directory is open to group or others.
inline constexpr char kStoreNotPrivate[] = "store.not_private";
// keel serve --token-file: a symlink, not a regular file, or another user's file.
inline constexpr char kServeTokenFileUnsafe[] = "serve.token_file_unsafe";
// keel serve --token-file: group or others may access it (anything wider than 0600).
inline constexpr char kServeTokenFilePermissions[] = "serve.token_file_permissions";

// transport: the WebSocket server before the upgrade (issue 15; transport/ws_handshake.h, docs/security.md).
// Each is the `code` of the JSON body of an HTTP refusal, or of `keel serve`'s refusal to start.
inline constexpr char kRpcHostRefused[] =
    "rpc.host_refused";  // Host not loopback nor the listen address (403)
inline constexpr char kRpcOriginRefused[] = "rpc.origin_refused";  // a browser Origin not allowed (403)
inline constexpr char kRpcBodyRefused[] = "rpc.body_refused";      // the upgrade request carries a body (400)
inline constexpr char kRpcHeaderTooLarge[] = "rpc.header_too_large";  // request header over 8 KiB (431)
// More connections waiting for their handshake than the server takes (503, at once, nothing read).
inline constexpr char kRpcTooManyUnauthenticated[] = "rpc.too_many_unauthenticated";
// --listen on a non-loopback address without --allow-remote.
inline constexpr char kRpcListenNotLoopback[] = "rpc.listen_not_loopback";

}  // namespace keel::codes
