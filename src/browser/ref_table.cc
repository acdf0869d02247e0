#include "browser/ref_table.h"

#include <algorithm>
#include <charconv>
#include <tuple>
#include <vector>

#include "browser/browser_errors.h"
#include "util/utf8.h"

namespace keel::browser {
namespace {

// Digits of a positive decimal without a leading zero; nullopt otherwise (or on overflow).
std::optional<int64_t> parse_positive(std::string_view digits) {
  if (digits.empty() || digits.front() == '0') return std::nullopt;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

// `"e12 (button "Buy")"`, for messages.
std::string describe(const RefRecord& record) {
  std::string text = record.ref + " (" + record.role;
  if (!record.name.empty()) text += " \"" + record.name + "\"";
  return text + ")";
}

// What the model passed as a ref, cut for a message (it may be anything, of any length).
std::string shown(std::string_view text) {
  constexpr size_t kCap = 40;
  return std::string(text.substr(0, utf8_prefix_length(text, kCap))) + (text.size() > kCap ? "…" : "");
}

constexpr char kSnapshotAdvice[] = "Take a new snapshot (browser_snapshot) and use its refs.";

}  // namespace

std::string ref_name(int64_t frame_ordinal, int64_t js_index) {
  std::string index = "e" + std::to_string(js_index);
  return frame_ordinal == 0 ? index : "f" + std::to_string(frame_ordinal) + index;
}

std::optional<RefParts> parse_ref(std::string_view ref) {
  RefParts parts;
  if (ref.starts_with('f')) {
    const size_t e = ref.find('e');
    if (e == std::string_view::npos) return std::nullopt;
    const auto ordinal = parse_positive(ref.substr(1, e - 1));
    if (!ordinal) return std::nullopt;
    parts.frame_ordinal = *ordinal;
    ref.remove_prefix(e);
  }
  if (!ref.starts_with('e')) return std::nullopt;
  const auto index = parse_positive(ref.substr(1));
  if (!index) return std::nullopt;
  parts.js_index = *index;
  return parts;
}

int64_t RefTable::begin_snapshot() {
  MutexLock lock(mu_);
  return ++snapshot_seq_;
}

int64_t RefTable::frame_ordinal(int64_t tab_id, const std::string& frame_id, bool main_frame) {
  if (main_frame) return 0;
  MutexLock lock(mu_);
  auto [it, inserted] = frame_ordinals_.try_emplace({tab_id, frame_id}, 0);
  if (inserted) it->second = ++frame_high_water_;
  return it->second;
}

int64_t RefTable::next_index(int64_t frame_ordinal) const {
  MutexLock lock(mu_);
  const auto it = index_high_water_.find(frame_ordinal);
  return it == index_high_water_.end() ? 1 : it->second + 1;
}

Result<RefRecord> RefTable::issue(RefKey key, std::string role, std::string name) {
  if (key.js_index <= 0 || key.frame_ordinal < 0) {
    return fail(codes::kBrowserBadScriptResult,
                "a page script reported element index " + std::to_string(key.js_index) +
                    " in frame ordinal " + std::to_string(key.frame_ordinal) + "; indices start at 1");
  }
  std::string ref = ref_name(key.frame_ordinal, key.js_index);
  MutexLock lock(mu_);
  if (const auto it = records_.find(ref); it != records_.end()) {
    RefRecord& known = it->second;
    if (known.key != key || known.role != role || known.name != name) {
      return fail(codes::kBrowserBadScriptResult, "a page script reported " + ref +
                                                      " for a different element than " + describe(known) +
                                                      "; ref indices must never be reused");
    }
    // The same element in the same document and world, shown by a new snapshot: usable again (a takeover
    // hand-back invalidates every ref, but the world and its registry outlive it).
    known.stale_reason.reset();
    known.snapshot_seq = snapshot_seq_;
    return known;
  }
  int64_t& high_water = index_high_water_[key.frame_ordinal];
  std::vector<bool>& issued_bits = issued_indices_[key.frame_ordinal];
  const auto bit = static_cast<size_t>(key.js_index);
  // A record forgotten under the memory bound comes back when a snapshot shows its element again.
  const bool forgotten = bit < issued_bits.size() && issued_bits[bit];
  if (key.js_index <= high_water && !forgotten) {
    return fail(codes::kBrowserBadScriptResult,
                "a page script reported " + ref + ", an index at or below the highest issued (" +
                    std::to_string(high_water) +
                    ") for an element keel never saw; ref indices must never be reused");
  }
  if (key.js_index > high_water + kMaxIndexStep) {
    return fail(codes::kBrowserBadScriptResult, "a page script reported " + ref + ", more than " +
                                                    std::to_string(kMaxIndexStep) +
                                                    " past the highest issued index");
  }
  if (issued_bits.size() <= bit) issued_bits.resize(bit + 1, false);
  issued_bits[bit] = true;
  high_water = std::max(high_water, key.js_index);
  RefRecord record;
  record.ref = ref;
  record.key = std::move(key);
  record.role = std::move(role);
  record.name = std::move(name);
  record.snapshot_seq = snapshot_seq_;
  RefRecord issued = records_.emplace(std::move(ref), std::move(record)).first->second;
  if (records_.size() > max_records_) forget_oldest();
  return issued;
}

void RefTable::forget_oldest() {
  // Oldest first, stale before live at the same age; the latest snapshot's records stay, even beyond the
  // bound (a snapshot that shows more refs than the bound keeps them all usable).
  std::vector<std::tuple<int64_t, bool, std::string_view>> candidates;
  for (const auto& [ref, record] : records_) {
    if (record.snapshot_seq < snapshot_seq_) {
      candidates.emplace_back(record.snapshot_seq, !record.stale_reason.has_value(), ref);
    }
  }
  const size_t target = max_records_ / 4 * 3;
  const size_t excess = records_.size() > target ? records_.size() - target : 0;
  const size_t count = std::min(excess, candidates.size());
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(count),
                    candidates.end());
  std::vector<std::string> forget;
  forget.reserve(count);
  for (size_t i = 0; i < count; ++i) forget.emplace_back(std::get<2>(candidates[i]));
  for (const std::string& ref : forget) records_.erase(ref);
}

Error RefTable::missing_ref(std::string_view ref, const RefParts& parts) const {
  const auto restored = restored_high_water_.find(parts.frame_ordinal);
  if (restored != restored_high_water_.end() && parts.js_index <= restored->second) {
    return Error(codes::kBrowserUnknownRef,
                 "Ref " + std::string(ref) +
                     " is from before keel restarted; it no longer names an element. " + kSnapshotAdvice);
  }
  const auto issued = index_high_water_.find(parts.frame_ordinal);
  if (issued != index_high_water_.end() && parts.js_index <= issued->second) {
    return Error(codes::kBrowserStaleRef,
                 "Ref " + std::string(ref) +
                     " named an element of an earlier snapshot that keel no longer keeps. " +
                     kSnapshotAdvice);
  }
  return Error(codes::kBrowserUnknownRef,
               "Ref " + std::string(ref) + " was never issued in this conversation. " + kSnapshotAdvice);
}

Result<RefRecord> RefTable::find(std::string_view ref, int64_t current_tab) const {
  const auto parts = parse_ref(ref);
  if (!parts) {
    return fail(codes::kBrowserUnknownRef,
                "\"" + shown(ref) +
                    "\" is not a ref; refs look like e12 or f2e7, as a snapshot shows "
                    "them. " +
                    kSnapshotAdvice);
  }
  MutexLock lock(mu_);
  const auto it = records_.find(ref);
  if (it == records_.end()) return fail(missing_ref(ref, *parts));
  const RefRecord& record = it->second;
  if (record.stale_reason) {
    return fail(codes::kBrowserStaleRef,
                "Ref " + describe(record) + " no longer points at the same element: " + *record.stale_reason +
                    ". " + kSnapshotAdvice);
  }
  if (record.key.tab_id != current_tab) {
    const std::string tab = std::to_string(record.key.tab_id);
    return fail(codes::kBrowserWrongTab, "Ref " + describe(record) + " belongs to tab " + tab +
                                             "; call browser_switch_tab{tab:" + tab +
                                             "} or snapshot this tab.");
  }
  return record;
}

Result<void> RefTable::pin(std::string_view ref, int64_t backend_node_id) {
  MutexLock lock(mu_);
  const auto it = records_.find(ref);
  if (it == records_.end()) {
    const auto parts = parse_ref(ref);
    return fail(parts ? missing_ref(ref, *parts)
                      : Error(codes::kBrowserUnknownRef, "\"" + shown(ref) + "\" is not a ref"));
  }
  RefRecord& record = it->second;
  if (record.backend_node_id != 0 && record.backend_node_id != backend_node_id) {
    return fail(codes::kBrowserStaleRef,
                "Ref " + describe(record) + " no longer points at the same element. " + kSnapshotAdvice);
  }
  record.backend_node_id = backend_node_id;
  return {};
}

void RefTable::invalidate_frame(int64_t tab_id, const std::string& frame_id, const std::string& reason) {
  MutexLock lock(mu_);
  for (auto& [ref, record] : records_) {
    if (!record.stale_reason && record.key.tab_id == tab_id && record.key.frame_id == frame_id) {
      record.stale_reason = reason;
    }
  }
}

void RefTable::invalidate_tab(int64_t tab_id, const std::string& reason) {
  MutexLock lock(mu_);
  for (auto& [ref, record] : records_) {
    if (!record.stale_reason && record.key.tab_id == tab_id) record.stale_reason = reason;
  }
}

void RefTable::invalidate_all(const std::string& reason) {
  MutexLock lock(mu_);
  for (auto& [ref, record] : records_) {
    if (!record.stale_reason) record.stale_reason = reason;
  }
}

nlohmann::json RefTable::high_water() const {
  MutexLock lock(mu_);
  nlohmann::json indices = nlohmann::json::object();
  for (const auto& [ordinal, mark] : index_high_water_) indices[std::to_string(ordinal)] = mark;
  return {{"frames", frame_high_water_}, {"indices", std::move(indices)}};
}

Result<void> RefTable::restore_high_water(const nlohmann::json& marks) {
  const auto bad = [](std::string what) {
    return fail(codes::kBrowserBadScriptResult, "the saved ref counters are unreadable: " + what);
  };
  if (!marks.is_object() || !marks.contains("frames") || !marks["frames"].is_number_integer() ||
      !marks.contains("indices") || !marks["indices"].is_object()) {
    return bad("expected {\"frames\": n, \"indices\": {...}}");
  }
  std::map<int64_t, int64_t> indices;
  for (const auto& [key, value] : marks["indices"].items()) {
    const auto ordinal = key == "0" ? std::optional<int64_t>(0) : parse_positive(key);
    if (!ordinal || !value.is_number_integer() || value.get<int64_t>() < 0)
      return bad("index mark \"" + key + "\"");
    indices[*ordinal] = value.get<int64_t>();
  }
  const int64_t frames = marks["frames"].get<int64_t>();
  if (frames < 0) return bad("frame mark");
  MutexLock lock(mu_);
  // Marks only grow: restoring never lowers a counter this table already advanced.
  frame_high_water_ = std::max(frame_high_water_, frames);
  for (const auto& [ordinal, mark] : indices) {
    int64_t& high_water = index_high_water_[ordinal];
    high_water = std::max(high_water, mark);
    restored_high_water_[ordinal] = std::max(restored_high_water_[ordinal], mark);
  }
  return {};
}

size_t RefTable::size() const {
  MutexLock lock(mu_);
  return records_.size();
}

}  // namespace keel::browser
