// browser/ref_table.h — the refs of one agent thread ("e12", "f2e7"): what each names, and whether it still
// may be used.
//
// A ref is issued for an element a snapshot found; its key records everything that must still hold for the
// ref to point at that element (tab, target, session, frame, document loader, world generation, index in the
// world's element registry). Guarantees:
//   - a ref string is never issued for two different elements: counters only grow, per frame ordinal
//     (0 = every tab's main frame, "e…"; n = the n-th subframe keel saw, "fne…"), and the high-water marks
//     survive a restart (high_water / restore_high_water), so a ref from before a restart is recognized as
//     such, never mistaken for a new one;
//   - find() names why a ref cannot be used, with a message that tells the model what to do:
//     browser.unknown_ref (never issued, or from before a restart), browser.stale_ref (invalidated: the
//     page navigated, the tab closed, keel restarted, ...), browser.wrong_tab (a ref of another tab);
//   - a found ref is only a candidate: the caller still checks the live element (resolve_ref, plan §1.6);
//   - memory is bounded: beyond `max_records`, the records of the oldest snapshots are forgotten (stale ones
//     first, never those of the latest snapshot); a forgotten ref is browser.stale_ref ("an earlier
//     snapshot"), never mistaken for one not yet issued.
//
// Thread-safe: every member may be called from any thread (one mutex; no call blocks on anything else).
// Records are returned as copies.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/error.h"
#include "util/thread_annotations.h"

namespace keel::browser {

// Where an element was found.
struct RefKey {
  int64_t tab_id = 0;
  std::string target_id;
  std::string session_id;
  std::string frame_id;
  std::string loader_id;         // the document; a navigation changes it
  int64_t frame_ordinal = 0;     // 0 for a main frame; see frame_ordinal()
  int64_t world_generation = 0;  // keel's isolated world in that document (recreated after a context reset)
  int64_t js_index = 0;          // the element's index in that world's registry (scripts/registry.js), > 0

  friend bool operator==(const RefKey&, const RefKey&) = default;
};

struct RefRecord {
  std::string ref;  // "e12" | "f2e7"
  RefKey key;
  int64_t backend_node_id = 0;  // the DOM node, pinned at first use or by the background pass; 0 = not yet
  std::string role;
  std::string name;
  int64_t snapshot_seq = 0;                 // the snapshot that last showed it
  std::optional<std::string> stale_reason;  // "the page navigated", "the tab was closed", ...
};

// "e12" for frame ordinal 0, "f2e7" for ordinal 2.
std::string ref_name(int64_t frame_ordinal, int64_t js_index);

// The parts of a well-formed ref string; nullopt for anything else ("e0", "E1", "f0e1", "e01", "e1x").
struct RefParts {
  int64_t frame_ordinal = 0;
  int64_t js_index = 0;
};
std::optional<RefParts> parse_ref(std::string_view ref);

class RefTable {
 public:
  static constexpr size_t kDefaultMaxRecords = 100'000;
  // How far past the highest issued index a new one may be (registry.js counts up from nextIndex; a jump
  // this large is a broken script, and would cost memory here).
  static constexpr int64_t kMaxIndexStep = 1'000'000;

  explicit RefTable(size_t max_records = kDefaultMaxRecords) : max_records_(max_records) {}

  // Starts a snapshot: the refs issued until the next call carry the returned sequence number.
  int64_t begin_snapshot() EXCLUDES(mu_);

  // The ordinal of a frame: 0 for a tab's main frame; a subframe gets the next unused ordinal the first time
  // it is seen and keeps it while it lives (a detached frame's ordinal is never given to another frame).
  int64_t frame_ordinal(int64_t tab_id, const std::string& frame_id, bool main_frame) EXCLUDES(mu_);

  // The lowest index not yet issued for `frame_ordinal`: the `nextIndex` a snapshot passes to the page
  // script, so a new world never hands out an index keel used before.
  int64_t next_index(int64_t frame_ordinal) const EXCLUDES(mu_);

  // Records the ref for `key` (a snapshot found the element with this role and name). Issuing the same key,
  // role and name again (a new snapshot shows the same element) refreshes its snapshot sequence and makes a
  // stale ref usable again; so does issuing a ref whose record was forgotten under the memory bound. Refused
  // with browser.bad_script_result (the page script broke the never-reuse guarantee, and the ref would be
  // ambiguous): an index already issued for another element, one at or below the high-water mark that was
  // never issued, one more than kMaxIndexStep past it.
  Result<RefRecord> issue(RefKey key, std::string role, std::string name) EXCLUDES(mu_);

  // The record of `ref` if the model may still use it in tab `current_tab`.
  Result<RefRecord> find(std::string_view ref, int64_t current_tab) const EXCLUDES(mu_);

  // Remembers the DOM node a ref resolved to; later uses must resolve to the same node.
  Result<void> pin(std::string_view ref, int64_t backend_node_id) EXCLUDES(mu_);

  // Marks refs stale with the reason find() will give. Already-stale refs keep their first reason.
  void invalidate_frame(int64_t tab_id, const std::string& frame_id, const std::string& reason) EXCLUDES(mu_);
  void invalidate_tab(int64_t tab_id, const std::string& reason) EXCLUDES(mu_);
  void invalidate_all(const std::string& reason) EXCLUDES(mu_);

  // The counters to persist ({"frames": n, "indices": {"0": n, "2": n}}), and to restore after a restart:
  // refs up to the restored marks are then "from before keel restarted".
  nlohmann::json high_water() const EXCLUDES(mu_);
  Result<void> restore_high_water(const nlohmann::json& marks) EXCLUDES(mu_);

  size_t size() const EXCLUDES(mu_);

 private:
  // The error for a well-formed ref without a record: from before a restart, forgotten, or never issued.
  Error missing_ref(std::string_view ref, const RefParts& parts) const REQUIRES(mu_);
  // Forgets the oldest records down to three quarters of max_records_ (see the header comment).
  void forget_oldest() REQUIRES(mu_);

  const size_t max_records_;
  mutable Mutex mu_;
  std::map<std::string, RefRecord, std::less<>> records_ GUARDED_BY(mu_);
  std::map<int64_t, int64_t> index_high_water_ GUARDED_BY(mu_);  // frame ordinal -> highest index issued
  std::map<int64_t, std::vector<bool>> issued_indices_ GUARDED_BY(mu_);  // ordinal -> index issued?
  std::map<int64_t, int64_t> restored_high_water_ GUARDED_BY(mu_);       // the marks before the last restart
  std::map<std::pair<int64_t, std::string>, int64_t> frame_ordinals_ GUARDED_BY(mu_);  // (tab, frame id)
  int64_t frame_high_water_ GUARDED_BY(mu_) = 0;
  int64_t snapshot_seq_ GUARDED_BY(mu_) = 0;
};

}  // namespace keel::browser
