// keel/fail_points.h — named points where tests make keel fail or die on purpose.
//
// keel names a fail point at every transaction boundary (and at a few other places that matter for
// durability, like "receipts.insert"). A test arms a point with an action:
//   - kError: the code at the point returns a failpoint.triggered error, as if the operation failed;
//   - kCrash: the process ends at once with SIGKILL, as if the machine lost power at that instant
//     (no destructors, no flushing; what the store synced is all that survives).
// A point can be armed to trigger only on its Nth hit (skip N-1 hits), and once or every time.
//
// Points are owned by a FailPoints object that is passed to the components that hit them (no global
// state). In builds with KEEL_FAILPOINTS_ENABLED, arm_from_env() arms points from the
// environment variable KEEL_FAILPOINTS, a ';'-separated list of `name=action[@nth][*]`:
//   KEEL_FAILPOINTS="store.commit.before_sync=crash@3;receipts.insert=error*"
// (`@3`: trigger on the third hit; `*`: keep triggering after the first time). Without
// KEEL_FAILPOINTS_ENABLED, hit() always returns success and costs one branch.
//
// Public because it is part of the store's and the engine's dependencies (keel/sqlite_store.h,
// keel/engine.h): an embedder may arm points to test its own recovery.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"
#include "keel/thread_annotations.h"

namespace keel {

class FailPoints {
 public:
  enum class Action { kError, kCrash };

  FailPoints() = default;
  FailPoints(const FailPoints&) = delete;
  FailPoints& operator=(const FailPoints&) = delete;

  // Arms `name`: triggers on hit number `nth` (1 = the next hit), then disarms unless `repeat`.
  void arm(std::string_view name, Action action, uint64_t nth = 1, bool repeat = false);
  void disarm(std::string_view name);
  void disarm_all();

  // Parses a KEEL_FAILPOINTS-style spec and arms its points. invalid_argument on a malformed spec.
  Result<void> arm_from_spec(std::string_view spec);
  // Arms from the KEEL_FAILPOINTS environment variable when set (only with KEEL_FAILPOINTS_ENABLED).
  Result<void> arm_from_env();

  // Called by instrumented code at the point `name`. Returns failpoint.triggered when an armed kError
  // triggers; never returns when an armed kCrash triggers.
  Result<void> hit(std::string_view name);

  // How many times `name` has been hit since construction (armed or not). For tests.
  uint64_t hits(std::string_view name) const;
  // Names hit so far, sorted; lets a crash test enumerate every boundary it can kill the process at.
  std::vector<std::string> names_seen() const;

 private:
  struct Armed {
    Action action;
    uint64_t trigger_at;  // absolute hit count at which to trigger
    bool repeat;
  };
  mutable Mutex mu_;
  std::map<std::string, Armed, std::less<>> armed_ KEEL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t, std::less<>> hits_ KEEL_GUARDED_BY(mu_);
};

}  // namespace keel
