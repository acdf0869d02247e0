// keel/fail_points.h — named points where tests make keel fail or die on purpose.
//
// keel names a fail point at every transaction boundary (and at a few other places that matter for
// durability, like "receipts.insert"). A test arms a point with an action:
//   - kError: the code at the point returns a failpoint.triggered error, as if the operation failed;
//   - kCrash: the process ends at once with SIGKILL, as if the machine lost power at that instant
//     (no destructors, no flushing; what the store synced is all that survives);
//   - kHold: the thread that hits the point blocks until the test releases it, then goes on as if the
//     point were not armed. The release is a FIFO (mkfifo) the test made and names when arming: the hold
//     opens it for reading and returns when a writer writes to it or closes it — no polling, no timeout.
//     A test holds keel at a named instant, does what must happen in that instant, then releases it by
//     writing to the FIFO (which also waits for the hold to have started: opening a FIFO for writing blocks
//     until it has a reader). A hold that cannot open its FIFO returns failpoint.triggered at once. What
//     waits for the held thread (keel's shutdown waits for its turns) waits for the release too.
// A point can be armed to trigger only on its Nth hit (skip N-1 hits), and once or every time.
//
// Points are owned by a FailPoints object that is passed to the components that hit them (no global
// state). In builds with KEEL_FAILPOINTS_ENABLED, arm_from_env() arms points from the
// environment variable KEEL_FAILPOINTS, a ';'-separated list of `name=action[@nth][*]`, where a hold names
// its FIFO after a ':' (the rest of the entry is the path):
//   KEEL_FAILPOINTS="store.commit.before_sync=crash@3;receipts.insert=error*;p=hold:/tmp/t/go"
// (`@3`: trigger on the third hit; `*`: keep triggering after the first time; `hold@2*:/path` with both).
// Without KEEL_FAILPOINTS_ENABLED, hit() always returns success and costs one branch.
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
  enum class Action { kError, kCrash, kHold };

  FailPoints() = default;
  FailPoints(const FailPoints&) = delete;
  FailPoints& operator=(const FailPoints&) = delete;

  // Arms `name`: triggers on hit number `nth` (1 = the next hit), then disarms unless `repeat`. kHold is
  // released through the FIFO at `release_fifo` (ignored by the other actions).
  void arm(std::string_view name, Action action, uint64_t nth = 1, bool repeat = false,
           std::string release_fifo = {});
  void disarm(std::string_view name);
  void disarm_all();

  // Parses a KEEL_FAILPOINTS-style spec and arms its points. invalid_argument on a malformed spec.
  Result<void> arm_from_spec(std::string_view spec);
  // Arms from the KEEL_FAILPOINTS environment variable when set (only with KEEL_FAILPOINTS_ENABLED).
  Result<void> arm_from_env();

  // Called by instrumented code at the point `name`. Returns failpoint.triggered when an armed kError
  // triggers; never returns when an armed kCrash triggers; blocks until released when an armed kHold
  // triggers, then returns success.
  Result<void> hit(std::string_view name);
  // Whether the next hit of `name` would hold (always false without KEEL_FAILPOINTS_ENABLED). Code that
  // must not block where it is (an engine strand) asks first and hits the point on a thread that may block.
  bool holds_next(std::string_view name) const;

  // How many times `name` has been hit since construction (armed or not). For tests.
  uint64_t hits(std::string_view name) const;
  // Names hit so far, sorted; lets a crash test enumerate every boundary it can kill the process at.
  std::vector<std::string> names_seen() const;

 private:
  struct Armed {
    Action action;
    uint64_t trigger_at;  // absolute hit count at which to trigger
    bool repeat;
    std::string release_fifo;  // kHold
  };
  mutable Mutex mu_;
  std::map<std::string, Armed, std::less<>> armed_ KEEL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t, std::less<>> hits_ KEEL_GUARDED_BY(mu_);
};

}  // namespace keel
