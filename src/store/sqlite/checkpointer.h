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
#include "util/thread_annotations.h"

namespace keel::sqlite {

class Checkpointer {
 public:
  // Frames in the WAL after which a checkpoint is requested. Four times SQLite's default: an agent rewrites
  // the same few pages (a thread's and a run's rows, the tails of the node indexes) in every commit, and a
  // checkpoint copies each distinct page once however often it was rewritten, so a longer interval copies
  // fewer pages per commit. The WAL stays bounded at about 16 MiB of 4 KiB frames between checkpoints.
  static constexpr int kFramesBeforeCheckpoint = 4000;

  explicit Checkpointer(std::unique_ptr<Connection> connection);
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Any thread; never blocks on the checkpoint itself.
  void request();
  // Checkpoints run so far (for tests and benchmarks).
  uint64_t completed() const;

 private:
  void run() EXCLUDES(mu_);

  std::unique_ptr<Connection> connection_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  bool requested_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t completed_ GUARDED_BY(mu_) = 0;
  std::thread thread_;  // last: started once everything else is ready
};

}  // namespace keel::sqlite
