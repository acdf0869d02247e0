// engine/engine_errors.h — error codes of the engine layer (stable, part of the protocol).
#pragma once

#include "keel/error.h"
#include "keel/error_codes.h"

namespace keel::codes {

inline constexpr char kProviderProtocol[] = "provider.protocol_error";
inline constexpr char kProviderFailed[] = "provider.error";
inline constexpr char kTurnBusy[] = "turn.busy";
inline constexpr char kThreadBusy[] = "thread.busy";
inline constexpr char kRunNotResumable[] = "run.not_resumable";
inline constexpr char kImageUnsupported[] = "input.image_unsupported";
// thread.setModel / thread.create name a model the engine's catalogue does not list, or a turn starts on a
// thread whose chosen model is no longer configured.
inline constexpr char kModelUnknown[] = "model.unknown";
// The next request would not fit the model's context window, and compaction is off or cannot make room.
inline constexpr char kContextWindowExceeded[] = "context.window_exceeded";
// The model's summary of the history could not be made (its error is in the message).
inline constexpr char kContextCompactionFailed[] = "context.compaction_failed";
inline constexpr char kInputInvalid[] = "input.invalid";
inline constexpr char kToolUnknown[] = "tool.unknown";
inline constexpr char kToolArgumentsNotJson[] = "tool.arguments_not_json";
inline constexpr char kToolFailed[] = "tool.failed";
inline constexpr char kEngineShutdown[] = "engine.shutting_down";
// Steering (spec §3).
inline constexpr char kSteerTurnMismatch[] = "steer.turn_mismatch";  // expectedTurnId is not the running turn
inline constexpr char kTurnEnded[] = "turn.ended";                   // too late to steer: enqueue instead
inline constexpr char kAttachmentNotFound[] = "attachment.not_found";
inline constexpr char kQueueEmpty[] = "queue.empty";
// turn.interrupt: the interrupted state could not be committed (the store refused the write); the run keeps
// its last persisted state.
inline constexpr char kInterruptNotPersisted[] = "turn.interrupt_not_persisted";
// takeover.start / takeover.end name no target this engine has (keel/takeover.h).
inline constexpr char kTakeoverUnknownTarget[] = "takeover.unknown_target";
// Recovery (spec §5).
inline constexpr char kSnapshotTooLarge[] = "snapshot.too_large";
inline constexpr char kSnapshotTooManyTools[] = "snapshot.too_many_tools";
inline constexpr char kSnapshotEntryTooLarge[] = "snapshot.entry_too_large";
inline constexpr char kSnapshotTooDeep[] = "snapshot.too_deep";
inline constexpr char kSnapshotDigestMismatch[] = "snapshot.digest_mismatch";
inline constexpr char kSnapshotVersionUnsupported[] = "snapshot.version_unsupported";
inline constexpr char kEnvironmentDrift[] = "environment.drift";
inline constexpr char kRunNotUncertain[] = "run.not_uncertain";  // run.resolveUncertain on another state
inline constexpr char kRunUncertain[] =
    "run.uncertain";  // a new turn must wait: a write's outcome is unknown
// Durable waits (spec §5): approvals and interactions.
inline constexpr char kThreadWaiting[] = "thread.waiting";  // an approval or interaction holds the thread
inline constexpr char kApprovalThreadMismatch[] = "approval.thread_mismatch";
inline constexpr char kApprovalExpired[] = "approval.expired";  // its run no longer waits for it
inline constexpr char kApprovalNotOffered[] = "approval.decision_not_offered";
inline constexpr char kInteractionThreadMismatch[] = "interaction.thread_mismatch";
inline constexpr char kInteractionExpired[] = "interaction.expired";  // its run no longer waits for it

}  // namespace keel::codes
