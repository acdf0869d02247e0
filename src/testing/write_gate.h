// testing/write_gate.h — a Store decorator for tests that must hold the engine at a write: while the
// WriteGate is paused, every begin(kWrite) waits at the gate (reads pass), and the test can wait until a
// given number of writers are held there. It makes an interleaving of the engine's threads deterministic
// without sleeping: e.g. the thread's strand held in one op's write while another thread decides something,
// then everything let go at once.
//
// Thread-safe. The gate must outlive the store that uses it; resume() (or the gate's destruction) must come
// before the engine is stopped, or its writers wait for ever.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <string_view>

#include "keel/store.h"
#include "util/thread_annotations.h"

namespace keel::testing {

class WriteGate {
 public:
  void pause() {
    MutexLock guard(mu_);
    paused_ = true;
  }
  void resume() {
    {
      MutexLock guard(mu_);
      paused_ = false;
    }
    cv_.notify_all();
  }
  // Waits until `n` writers are held at the gate. The bound is a hang guard, not a timing assertion.
  bool wait_held(size_t n, std::chrono::seconds bound = std::chrono::seconds(30)) {
    MutexLock lock(mu_);
    const auto give_up = std::chrono::steady_clock::now() + bound;
    while (held_ < n) {
      if (lock.wait_until(cv_, give_up) == std::cv_status::timeout) return held_ >= n;
    }
    return true;
  }
  // Called by the store at every begin(kWrite): waits while the gate is paused.
  void pass() {
    MutexLock lock(mu_);
    if (!paused_) return;
    ++held_;
    cv_.notify_all();
    while (paused_) lock.wait(cv_);
    --held_;
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  bool paused_ GUARDED_BY(mu_) = false;
  size_t held_ GUARDED_BY(mu_) = 0;
};

class GatedStore final : public Store {
 public:
  // `gate` must outlive the store.
  GatedStore(std::unique_ptr<Store> inner, WriteGate& gate) : inner_(std::move(inner)), gate_(gate) {}
  Result<std::unique_ptr<Transaction>> begin(TxMode mode) override {
    if (mode == TxMode::kWrite) gate_.pass();
    return inner_->begin(mode);
  }
  StoreStats stats() const override { return inner_->stats(); }
  int schema_version() const override { return inner_->schema_version(); }
  std::string_view backend() const override { return inner_->backend(); }
  bool poisoned() const override { return inner_->poisoned(); }

 private:
  std::unique_ptr<Store> inner_;
  WriteGate& gate_;
};

}  // namespace keel::testing
