#include "store/sqlite/checkpointer.h"

namespace keel::sqlite {

Checkpointer::Checkpointer(std::unique_ptr<Connection> connection)
    : connection_(std::move(connection)), thread_([this] { run(); }) {}

Checkpointer::~Checkpointer() {
  {
    MutexLock guard(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Checkpointer::request() {
  {
    MutexLock guard(mu_);
    requested_ = true;
  }
  cv_.notify_one();
}

uint64_t Checkpointer::completed() const {
  MutexLock guard(mu_);
  return completed_;
}

void Checkpointer::run() {
  MutexLock lock(mu_);
  while (true) {
    while (!requested_ && !stopping_) lock.wait(cv_);
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
