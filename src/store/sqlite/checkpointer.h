// store/sqlite/checkpointer.h — moves WAL contents into the database file on a thread of its own.
//
// SQLite's automatic checkpoint runs inside whichever COMMIT pushes the WAL past its threshold, so that one
// commit (and every writer queued behind it) waits while pages are copied and the database file is synced:
// the long tail of commit latency. The store turns automatic checkpoints off and hands them to this
// object instead: request() (cheap, from SQLite's WAL hook after a commit) wakes a thread that runs a
// PASSIVE checkpoint on its own connection, which never blocks writers or readers. A checkpoint that
// cannot finish (a reader holds old pages) is retried at the next request.
//
// Thread-safe. The destructor stops the thread; the store destroys it before closing its writer.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/sqlite/sqlite_connection.h"

namespace keel::sqlite {

class Checkpointer {
 public:
  // Frames in the WAL after which a checkpoint is requested (SQLite's own default threshold).
  static constexpr int kFramesBeforeCheckpoint = 1000;

  explicit Checkpointer(std::unique_ptr<Connection> connection);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Any thread; never blocks on the checkpoint itself.
  void request();
  // Checkpoints run so far (for tests and benchmarks).
  uint64_t completed() const;

 private:
  void run();

  std::unique_ptr<Connection> connection_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool requested_ = false;
  bool stopping_ = false;
  uint64_t completed_ = 0;
  std::thread thread_;  // last: started once everything else is ready
};

}  // namespace keel::sqlite
