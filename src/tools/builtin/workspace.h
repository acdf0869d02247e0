// tools/builtin/workspace.h — the folder the builtin file tools are confined to.
//
// A Workspace holds the canonical path of its root and resolves the paths a model gives (relative to the
// root, or absolute) to paths inside it. Resolution refuses, with workspace.path_outside:
//   - absolute paths outside the root;
//   - ".." escapes, however they are spelled ("a/../../x");
//   - symlink escapes: the path is resolved with std::filesystem::weakly_canonical (symlinks followed as far
//     as the path exists) and the result must lie inside the canonical root. For writes, the parent folder's
//     canonical path is checked too, again after missing folders were created.
// Tree walks (list_files, search_files) never follow symlinks, so a link cannot lead a walk outside.
//
// What it does not defend against: another process swapping folders for symlinks between the check and
// the use. The workspace is the user's own folder; the threat is the model's arguments, not a concurrent
// attacker on the same machine.
//
// A Workspace is immutable after open(); every method is thread-safe. Filesystem failures are values
// (workspace.* codes), never exceptions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel::builtin {

struct WorkspaceLimits {
  // read_file and edit_file refuse bigger files (workspace.too_large); search_files skips them.
  uint64_t max_file_bytes = uint64_t{1} << 20;  // 1 MiB
};

// A path inside the workspace.
struct WorkspacePath {
  std::filesystem::path absolute;  // canonical as far as it exists (symlinks resolved)
  std::string relative;            // relative to the root, '/'-separated; "." for the root itself
};

class Workspace {
 public:
  // `root` must be an existing directory (workspace.not_found / workspace.io_error otherwise).
  static Result<std::shared_ptr<const Workspace>> open(const std::filesystem::path& root,
                                                       WorkspaceLimits limits = {});

  const std::filesystem::path& root() const { return root_; }
  const WorkspaceLimits& limits() const { return limits_; }

  // Resolves `requested` ("" means the root) for reading or listing. The path need not exist.
  Result<WorkspacePath> resolve(std::string_view requested) const;
  // Resolves `requested` as a file to write: as resolve(), and it is not the root, and its parent's
  // canonical path is inside the root.
  Result<WorkspacePath> resolve_for_write(std::string_view requested) const;

  // The contents of a regular file of at most limits().max_file_bytes. Errors: workspace.not_found,
  // workspace.not_a_file (a folder or special file), workspace.too_large, workspace.binary_file (it holds a
  // NUL byte), workspace.io_error.
  Result<std::string> read_text(const WorkspacePath& file) const;

  // Replaces (or creates) `file` with `content` atomically: written to a temporary file in the same folder,
  // flushed, then renamed over the target, so a reader (or a crash) sees the old or the new content, never
  // a mix. Creates missing parent folders inside the root. An existing file keeps its permission bits.
  // Errors: workspace.not_a_file (a folder is in the way), workspace.path_outside, workspace.io_error.
  Result<void> write_atomically(const WorkspacePath& file, std::string_view content) const;

  // `absolute` (inside the root, not resolved further) as a root-relative path.
  std::string relative(const std::filesystem::path& absolute) const;

 private:
  Workspace(std::filesystem::path root, WorkspaceLimits limits) : root_(std::move(root)), limits_(limits) {}
  bool contains(const std::filesystem::path& canonical) const;

  std::filesystem::path root_;  // canonical
  WorkspaceLimits limits_;
};

}  // namespace keel::builtin
