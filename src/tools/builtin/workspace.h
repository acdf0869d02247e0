// tools/builtin/workspace.h — the folder the builtin file tools are confined to.
//
// A Workspace holds a directory descriptor of its root, opened once by open(), and does every file
// operation through descriptors beneath it, never by a path name that could be re-resolved. This is what
// makes confinement hold against another process changing the tree while a tool runs (issue 15 point 9:
// a folder swapped for a symlink with renameat2(RENAME_EXCHANGE) between a check and the use):
//   - A path is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) relative to the root
//     descriptor, so the kernel refuses, atomically with the lookup, every ".." above the root and every
//     symlink on the way. Where the kernel has no openat2 (ENOSYS), the same rule is kept by walking the
//     components one by one with openat(O_NOFOLLOW) from the previous component's descriptor.
//   - The operation then uses what was opened: a read reads the opened file; a write opens its folder,
//     creates a temporary file in it and renameat()s it over the name within that same folder; a listing
//     or search reads the opened folder and opens each subfolder relative to it, never following a
//     symlink.
// So a swap can make an operation fail, but never make it read or write outside the root.
//
// Path rules (resolve(), resolve_for_write()), all refused with workspace.path_outside:
//   - absolute paths outside the root; ".." escapes, however spelled ("a/../../x"); ".." is applied
//     lexically, which is exact because no symlink is ever followed;
//   - a symlink anywhere in the path, whether its target is inside or outside: the workspace tools do not
//     follow symlinks (a link can be repointed between any check and any use). list_files shows them.
//     A write may *replace* a symlink at its last component (the new file takes the link's name); it never
//     writes through it.
//   - a read of a regular file with more than one hard link owned by another user than the workspace root's
//     owner: such a file may be a file from outside the workspace linked in (the kernel's
//     protected_hardlinks only stops linking files the linker cannot write). A file with several links of
//     the workspace owner's (pnpm stores, `cp -l` copies) is read as usual.
// Writes never write into an existing file: the new content is a new file renamed over the name, so a hard
// link to a file outside is replaced, not written through (its other names keep their content). That is
// why writes through a hard link are not refused.
//
// resolve() checks what exists of the path when it is called, so that a bad path is refused before a
// person is asked to approve it; the use checks again, atomically, because the tree may have changed.
//
// A Workspace is immutable after open(); every method is thread-safe. Filesystem failures are values
// (workspace.* codes), never exceptions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "keel/cancellation.h"
#include "keel/error.h"

namespace keel::builtin {

struct WorkspaceLimits {
  // read_file and edit_file refuse bigger files (workspace.too_large); search_files skips them.
  uint64_t max_file_bytes = uint64_t{1} << 20;  // 1 MiB
};

// For tests only: how paths are opened, and a hook called between resolving a path (its descriptor is
// open) and using it, with the name of the point ("read.opened", "write.folder_opened",
// "walk.folder_opened"). A test swaps folders there to make a check-then-use race deterministic.
struct WorkspaceTestHooks {
  bool force_descriptor_walk = false;  // use the O_NOFOLLOW walk even where openat2 exists
  std::function<void(std::string_view point)> between_resolve_and_use;
  std::optional<unsigned> owner;  // the workspace owner's uid instead of the root folder's owner
};

// A path inside the workspace.
struct WorkspacePath {
  std::filesystem::path absolute;  // root / relative: a name for people, never used to reach the file
  std::string relative;            // relative to the root, '/'-separated, normalized; "." for the root
};

// An entry of a folder (or the one entry a path names), as lstat sees it: symlinks are not followed.
struct WorkspaceEntry {
  enum class Type { kFile, kFolder, kSymlink, kOther };
  std::string relative;
  Type type = Type::kOther;
  uint64_t size = 0;  // regular files only
};

// What write_atomically() replaced.
struct WorkspaceWrite {
  bool replaced = false;        // a file (or symlink) of that name existed
  uint64_t previous_bytes = 0;  // its size, for a regular file
};

class Workspace {
 public:
  // `root` must be an existing directory (workspace.not_found / workspace.io_error otherwise).
  static Result<std::shared_ptr<const Workspace>> open(const std::filesystem::path& root,
                                                       WorkspaceLimits limits = {},
                                                       WorkspaceTestHooks hooks = {});
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  const std::filesystem::path& root() const { return root_; }
  const WorkspaceLimits& limits() const { return limits_; }

  // Resolves `requested` ("" means the root) for reading or listing. The path need not exist; what exists
  // of it must not be a symlink.
  Result<WorkspacePath> resolve(std::string_view requested) const;
  // Resolves `requested` as a file to write: as resolve(), it is not the root, and only its folder is
  // checked (the last component may be missing, a file, or a symlink to replace).
  Result<WorkspacePath> resolve_for_write(std::string_view requested) const;

  // The entry `path` names. Errors: workspace.not_found, workspace.path_outside, workspace.io_error.
  Result<WorkspaceEntry> inspect(const WorkspacePath& path) const;

  // Visits the entries of the folder `folder` sorted by name, depth-first into subfolders when
  // `recursive`, never through a symlink. `visit` returns false to stop. Checks `cancel` before every
  // entry. A subfolder that cannot be opened is skipped; `folder` itself not opening is an error
  // (workspace.not_found, workspace.not_a_file, workspace.path_outside, workspace.io_error). Returns false
  // when `visit` stopped the walk.
  Result<bool> walk(const WorkspacePath& folder, bool recursive, const CancellationToken& cancel,
                    const std::function<bool(const WorkspaceEntry&)>& visit) const;

  // The contents of a regular file of at most limits().max_file_bytes. Errors: workspace.not_found,
  // workspace.not_a_file (a folder or special file), workspace.path_outside (a symlink, or a hard link of
  // another user's), workspace.too_large, workspace.binary_file (it holds a NUL byte), workspace.io_error.
  Result<std::string> read_text(const WorkspacePath& file) const;

  // Replaces (or creates) `file` with `content` atomically: written to a temporary file in the same folder,
  // flushed, then renamed over the target within that folder's descriptor, so a reader (or a crash) sees
  // the old or the new content, never a mix. Creates missing parent folders inside the root. An existing
  // file keeps its permission bits. Errors: workspace.not_a_file (a folder is in the way),
  // workspace.path_outside (a symlink on the way), workspace.io_error.
  Result<WorkspaceWrite> write_atomically(const WorkspacePath& file, std::string_view content) const;

 private:
  Workspace(std::filesystem::path root, int root_fd, unsigned owner, WorkspaceLimits limits,
            WorkspaceTestHooks hooks);
  Result<std::string> normalize(std::string_view requested) const;
  Result<int> open_beneath(const std::string& relative, int flags) const;
  Result<int> open_by_walk(const std::string& relative, int flags) const;
  Result<int> open_folder_creating(const std::string& relative) const;
  void hook(std::string_view point) const;

  std::filesystem::path root_;  // canonical at open(); for messages only
  int root_fd_;                 // owned; O_PATH | O_DIRECTORY
  unsigned owner_;              // the root's owner (uid)
  WorkspaceLimits limits_;
  WorkspaceTestHooks hooks_;
};

}  // namespace keel::builtin
