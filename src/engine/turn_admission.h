// engine/turn_admission.h — admitting a new turn (spec §2, §3): a turn's input read from an op, and, in the
// caller's command transaction, the run with its frozen environment snapshot (spec §5), the turn_context
// and user_message nodes, and the fallback title of a thread's first turn.
//
// TurnAdmission only reads and writes through the transaction it is given; announcing the turn and starting
// its runner stay with the caller (EngineCore::Impl), after the commit. Any thread; the context's members
// must outlive it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "keel/ids.h"
#include "keel/model_catalog.h"
#include "keel/provider.h"
#include "keel/store.h"
#include "keel/tool_registry.h"
#include "store/records.h"
#include "store/run_repository.h"
#include "store/snapshot_repository.h"
#include "store/thread_repository.h"

namespace keel {

// What admitting a turn needs: ids, the repositories it writes, and what the run's snapshot freezes.
struct TurnAdmissionContext {
  IdSource& ids;
  ThreadRepository& threads;
  RunRepository& runs;
  SnapshotRepository& snapshots;
  ToolRegistry& tools;
  const ModelCatalog& models;            // the run takes its thread's model from here, or the default one
  const SkillCatalog* skills = nullptr;  // optional: the skills the run binds (EngineDeps::skills)
};

// A turn admitted in the caller's transaction.
struct AdmittedTurn {
  RunRecord run;
  NodeRecord user;
  std::optional<ThreadRecord> titled;  // the fallback title of a thread's first turn
  bool first_turn = false;
  std::string first_line;
};

class TurnAdmission {
 public:
  explicit TurnAdmission(TurnAdmissionContext context) : c_(context) {}

  // A turn's input — a string, an array of content blocks, or {content: [...]} — as content blocks.
  // Errors: input.invalid, input.image_unsupported (an image when no model takes images; admit() checks
  // the thread's own model).
  Result<std::vector<ContentBlock>> input(const nlohmann::json& input) const;

  // The turn's run, turn_context and user_message in `tx`, under the thread's leaf, or under `branch_from`
  // (a new branch, the thread's leaf moving to its user message; "" is the root: an empty history), which
  // must be where a turn may start: a node a turn_context already follows (the end of an earlier turn) or
  // a leaf of the thread's tree. The run's snapshot freezes the thread's model (ThreadRecord::model, or the
  // catalogue's default). Errors: thread.not_found, run.uncertain (the thread's latest run waits for the
  // person to resolve an uncertain call), node.not_found, node.not_in_thread, invalid_argument (a node
  // inside a turn), model.unknown (the thread's model is no longer configured), input.image_unsupported (an
  // image for a model without vision), snapshot and store errors.
  Result<AdmittedTurn> admit(Transaction& tx, const std::string& thread_id,
                             const std::vector<ContentBlock>& content, std::optional<int64_t> budget,
                             std::optional<std::string> branch_from = std::nullopt);

 private:
  Result<void> check_branch_point(Transaction& tx, const ThreadRecord& thread, const std::string& node_id);
  TurnAdmissionContext c_;
};

}  // namespace keel
