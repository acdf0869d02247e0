#include "store/sqlite/checkpointer.h"

namespace keel::sqlite {

Checkpointer::Checkpointer(std::unique_ptr<Connection> connection)
    : connection_(std::move(connection)), thread_([this] { run(); }) {}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard<std::mutex> guard(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Checkpointer::request() {
  {
    std::lock_guard<std::mutex> guard(mu_);
    requested_ = true;
  }
  cv_.notify_one();
}

uint64_t Checkpointer::completed() const {
  std::lock_guard<std::mutex> guard(mu_);
  return completed_;
}

void Checkpointer::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return requested_ || stopping_; });
    if (stopping_) return;
    requested_ = false;
    lock.unlock();
    // PASSIVE: copies what it can without waiting for any lock; busy or partial results are fine, the next
    // request tries again.
    const bool done = connection_->exec("PRAGMA wal_checkpoint(PASSIVE)").has_value();
    lock.lock();
    if (done) ++completed_;
  }
}

}  // namespace keel::sqlite
