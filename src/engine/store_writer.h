// engine/store_writer.h — one write transaction run and committed, and what a refused write means for the
// engine: when the store is poisoned (a failed sync, e.g. a full disk; keel/store.h) it refuses every write
// until reopened, and `on_refused` (the engine's stop_for_store_failure) runs.
//
// Any thread. The store must outlive the writer; `on_refused` must be safe to call from any thread.
#pragma once

#include <functional>
#include <utility>

#include "keel/store.h"

namespace keel {

class StoreWriter {
 public:
  StoreWriter(Store& store, std::function<void()> on_poisoned)
      : store_(store), on_poisoned_(std::move(on_poisoned)) {}

  Store& store() { return store_; }

  // Runs `body` in one write transaction and commits it; `body` returns a Result, and its error or the
  // commit's is returned.
  template <typename F>
  auto write(F&& body) -> decltype(body(std::declval<Transaction&>())) {
    auto tx = store_.begin(TxMode::kWrite);
    if (!tx) {
      check();
      return std::unexpected((std::move(tx)).error());
    }
    auto result = body(**tx);
    if (!result) return result;
    auto committed = (*tx)->commit();
    if (!committed) {
      check();
      return std::unexpected(std::move(committed).error());
    }
    return result;
  }

  // After a failed write: a poisoned store stops the engine.
  void check() {
    if (store_.poisoned()) on_poisoned_();
  }

 private:
  Store& store_;
  std::function<void()> on_poisoned_;
};

}  // namespace keel
