// cli/store_files.h — the store's files kept private to the person running keel.
//
// The store holds what the model read (file contents), prompts and replies. prepare_store_files() runs
// before SQLite opens the store: it creates each missing folder of the store's directory mode 0700 and a
// missing database file mode 0600, whatever the umask. SQLite gives the -wal and -shm files it creates the
// mode of the database file, so they are 0600 too. Files that exist are never changed: for each of the
// directory, the database, -wal and -shm that group or others may access, it returns a store.not_private
// warning saying how to fix it. A symlink at the database's path is left to SQLite (a store may be reached
// through one; the engine's lock is on the file, cli/engine_host.h).
#pragma once

#include <filesystem>
#include <vector>

#include "keel/error.h"

namespace keel::cli {

// Errors: store.open_failed (a folder or the file cannot be created).
Result<std::vector<Error>> prepare_store_files(const std::filesystem::path& store_path);

}  // namespace keel::cli
