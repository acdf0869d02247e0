// tools/builtin/workspace.cc — confinement on descriptors, bounded reads and atomic writes for the file
// tools.
#include "tools/builtin/workspace.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <system_error>
#include <utility>
#include <vector>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"
#include "tools/tool_errors.h"

namespace keel::builtin {

namespace fs = std::filesystem;

namespace {

// Owns one file descriptor; closes it on every path out.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  // Closes now and reports close()'s own failure (on some filesystems the first report of a write error).
  int close() { return ::close(std::exchange(fd_, -1)); }

 private:
  void reset() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }
  int fd_;
};

// How a path is named in messages: the model's own spelling, made printable.
std::string shown_path(std::string_view path) { return "\"" + valid_utf8(path) + "\""; }

std::string errno_message(int error) { return std::error_code(error, std::generic_category()).message(); }

Error symlink_error(std::string_view relative) {
  return Error(codes::kWorkspacePathOutside,
               shown_path(relative) +
                   " is a symbolic link or passes through one; the workspace tools do not follow symbolic "
                   "links (one can point anywhere). Use the path of its target inside the workspace");
}

// The error for an open() of `relative` that failed with `error`.
Error open_error(int error, std::string_view relative) {
  switch (error) {
    case ELOOP:
      return symlink_error(relative);
    case EXDEV:  // RESOLVE_BENEATH: the lookup tried to leave the root
      return Error(codes::kWorkspacePathOutside,
                   "path " + shown_path(relative) + " is outside the workspace");
    case ENOENT:
      return Error(codes::kWorkspaceNotFound, shown_path(relative) + " does not exist");
    case ENOTDIR:
      return Error(codes::kWorkspaceNotFound,
                   shown_path(relative) + " does not exist (a part of it is a file, not a folder)");
    default:
      return Error(codes::kWorkspaceIo, "cannot open " + shown_path(relative) + ": " + errno_message(error));
  }
}

WorkspaceEntry::Type type_of(mode_t mode) {
  if (S_ISREG(mode)) return WorkspaceEntry::Type::kFile;
  if (S_ISDIR(mode)) return WorkspaceEntry::Type::kFolder;
  if (S_ISLNK(mode)) return WorkspaceEntry::Type::kSymlink;
  return WorkspaceEntry::Type::kOther;
}

// The '/'-separated components of a normalized relative path ("." has none).
std::vector<std::string> components(const std::string& relative) {
  std::vector<std::string> parts;
  if (relative == ".") return parts;
  size_t start = 0;
  while (start <= relative.size()) {
    const size_t end = std::min(relative.find('/', start), relative.size());
    parts.push_back(relative.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string child_of(const std::string& folder, std::string_view name) {
  return folder == "." ? std::string(name) : folder + "/" + std::string(name);
}

// openat2 has no glibc wrapper on Debian 12.
int openat2_beneath(int dirfd, const char* path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path, &how, sizeof how));
}

Result<void> write_all(int fd, std::string_view content) {
  size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(codes::kWorkspaceIo, "write failed: " + errno_message(errno));
    }
    written += static_cast<size_t>(n);
  }
  return {};
}

// A fresh name for the temporary file beside `target_name`; O_EXCL at open() is what guarantees it is unused.
std::string temporary_name(std::string_view target_name) {
  static std::atomic<uint64_t> counter{0};
  const std::string stem(target_name.substr(0, 100));  // stay well under NAME_MAX with the suffix
  return "." + stem + ".keel-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

Workspace::Workspace(fs::path root, int root_fd, unsigned owner, WorkspaceLimits limits,
                     WorkspaceTestHooks hooks)
    : root_(std::move(root)), root_fd_(root_fd), owner_(owner), limits_(limits), hooks_(std::move(hooks)) {}

Workspace::~Workspace() { ::close(root_fd_); }

Result<std::shared_ptr<const Workspace>> Workspace::open(const fs::path& root, WorkspaceLimits limits,
                                                         WorkspaceTestHooks hooks) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(root, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) {
      return fail(codes::kWorkspaceNotFound,
                  "workspace root " + shown_path(root.string()) + " does not exist");
    }
    return fail(codes::kWorkspaceIo,
                "cannot open workspace root " + shown_path(root.string()) + ": " + ec.message());
  }
  // The root itself is taken as it is now; everything after goes through this descriptor.
  Fd fd(::open(canonical.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOTDIR) {
      return fail(codes::kWorkspaceNotFound,
                  "workspace root " + shown_path(root.string()) + " is not a folder");
    }
    return fail(codes::kWorkspaceIo,
                "cannot open workspace root " + shown_path(root.string()) + ": " + errno_message(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail(codes::kWorkspaceIo,
                "cannot inspect workspace root " + shown_path(root.string()) + ": " + errno_message(errno));
  }
  const unsigned owner = hooks.owner.value_or(st.st_uid);
  return std::shared_ptr<const Workspace>(
      new Workspace(canonical, fd.release(), owner, limits, std::move(hooks)));
}

void Workspace::hook(std::string_view point) const {
  if (hooks_.between_resolve_and_use) hooks_.between_resolve_and_use(point);
}

// The root-relative, '/'-separated, normalized form of `requested`, with ".." applied lexically. Exact,
// because no symlink is ever followed: a name's parent is the folder it was found in.
Result<std::string> Workspace::normalize(std::string_view requested) const {
  if (requested.find('\0') != std::string_view::npos) {
    return fail(codes::kInvalidArgument, "path " + shown_path(requested) + " contains a NUL character");
  }
  const Error outside(codes::kWorkspacePathOutside,
                      "path " + shown_path(requested) +
                          " is outside the workspace; use a path relative to the workspace root");
  fs::path relative = requested.empty() ? fs::path(".") : fs::path(std::string(requested));
  if (relative.is_absolute()) {
    const fs::path lexical = relative.lexically_normal();
    auto [root_end, path_at] = std::mismatch(root_.begin(), root_.end(), lexical.begin(), lexical.end());
    if (root_end == root_.end()) {
      relative = lexical.lexically_relative(root_);
    } else {
      // Spelled through a symlink to the root (or above it)? The name is only translated here; the use
      // goes through the root's descriptor whatever this finds.
      std::error_code ec;
      const fs::path resolved = fs::weakly_canonical(lexical, ec);
      if (ec) return fail(outside);
      auto [end, at] = std::mismatch(root_.begin(), root_.end(), resolved.begin(), resolved.end());
      if (end != root_.end()) return fail(outside);
      relative = resolved.lexically_relative(root_);
    }
  }
  std::vector<std::string> parts;
  for (const fs::path& part : relative) {
    const std::string name = part.string();
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      if (parts.empty()) return fail(outside);
      parts.pop_back();
      continue;
    }
    parts.push_back(name);
  }
  if (parts.empty()) return std::string(".");
  std::string joined;
  for (const std::string& part : parts) {
    if (!joined.empty()) joined += '/';
    joined += part;
  }
  return joined;
}

Result<int> Workspace::open_beneath(const std::string& relative, int flags) const {
  flags |= O_NOFOLLOW | O_CLOEXEC;
  if (relative == ".") {
    const int fd = ::openat(root_fd_, ".", flags & ~O_NOFOLLOW);
    if (fd < 0) return fail(open_error(errno, relative));
    return fd;
  }
  if (!hooks_.force_descriptor_walk) {
    int fd = -1;
    do {
      fd = openat2_beneath(root_fd_, relative.c_str(), flags);
    } while (fd < 0 && (errno == EAGAIN || errno == EINTR));  // EAGAIN: a concurrent rename; look again
    if (fd >= 0) {
      // With O_PATH | O_NOFOLLOW a final symlink is opened as itself rather than refused.
      struct stat st {};
      if ((flags & O_PATH) != 0 && ::fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
        ::close(fd);
        return fail(symlink_error(relative));
      }
      return fd;
    }
    const int error = errno;
    if (error == ENOTDIR && (flags & O_PATH) == 0) {
      // O_DIRECTORY | O_NOFOLLOW reports a final symlink as ENOTDIR: say what it is.
      auto as_path = open_beneath(relative, O_PATH);
      if (as_path) ::close(*as_path);
      if (!as_path && as_path.error().code() == codes::kWorkspacePathOutside) return fail(as_path.error());
    }
    if (error != ENOSYS) return fail(open_error(error, relative));
  }
  return open_by_walk(relative, flags);
}

// The fallback for kernels without openat2: one component at a time, each opened without following a
// symlink, relative to the descriptor of the folder it was found in. `relative` has no "." or "..".
Result<int> Workspace::open_by_walk(const std::string& relative, int flags) const {
  const std::vector<std::string> parts = components(relative);
  Fd folder(::openat(root_fd_, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (folder.get() < 0) return fail(open_error(errno, "."));
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const int fd = ::openat(folder.get(), parts[i].c_str(),
                            last ? flags : (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd < 0) {
      const int error = errno;
      // O_NOFOLLOW reports a symlink as ELOOP, or as ENOTDIR together with O_DIRECTORY.
      struct stat st {};
      if (error == ENOTDIR && ::fstatat(folder.get(), parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        return fail(symlink_error(relative));
      }
      return fail(open_error(error, relative));
    }
    Fd opened(fd);
    struct stat st {};
    if (::fstat(opened.get(), &st) == 0 && S_ISLNK(st.st_mode)) return fail(symlink_error(relative));
    if (last) return opened.release();
    folder = std::move(opened);
  }
  return folder.release();  // unreachable: "." is handled by open_beneath
}

// Opens the folder `relative` for reading (so it can be fsynced), creating what is missing of it, one
// component at a time relative to its parent's descriptor.
Result<int> Workspace::open_folder_creating(const std::string& relative) const {
  auto opened = open_beneath(relative, O_RDONLY | O_DIRECTORY);
  if (opened || opened.error().code() != codes::kWorkspaceNotFound) return opened;
  Fd folder(::openat(root_fd_, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (folder.get() < 0) return fail(open_error(errno, "."));
  for (const std::string& part : components(relative)) {
    int fd = ::openat(folder.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      if (::mkdirat(folder.get(), part.c_str(), 0777) != 0 && errno != EEXIST) {
        return fail(codes::kWorkspaceIo,
                    "cannot create the folder " + shown_path(relative) + ": " + errno_message(errno));
      }
      fd = ::openat(folder.get(), part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      const int error = errno;
      struct stat st {};
      if (error == ENOTDIR && ::fstatat(folder.get(), part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(st.st_mode)) return fail(symlink_error(relative));
        return fail(codes::kWorkspaceNotAFile, "a file is in the way of the folder " + shown_path(relative));
      }
      return fail(open_error(error, relative));
    }
    folder = Fd(fd);
  }
  const int fd = ::openat(folder.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(open_error(errno, relative));
  return fd;
}

Result<WorkspacePath> Workspace::resolve(std::string_view requested) const {
  const std::string relative = KEEL_TRY(normalize(requested));
  // Refuses now what can be seen now (a symlink, a ".." out of the root); the use checks again.
  if (auto opened = open_beneath(relative, O_PATH); opened) {
    ::close(*opened);
  } else if (opened.error().code() == codes::kWorkspacePathOutside) {
    return fail(opened.error());
  }
  return WorkspacePath{root_ / relative, relative};
}

Result<WorkspacePath> Workspace::resolve_for_write(std::string_view requested) const {
  const std::string relative = KEEL_TRY(normalize(requested));
  if (relative == ".") {
    return fail(codes::kWorkspaceNotAFile, "path " + shown_path(requested) + " names a folder, not a file");
  }
  const size_t slash = relative.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : relative.substr(0, slash);
  if (auto opened = open_beneath(folder, O_PATH); opened) {
    ::close(*opened);
  } else if (opened.error().code() == codes::kWorkspacePathOutside) {
    return fail(codes::kWorkspacePathOutside, "the folder of " + shown_path(requested) +
                                                  " is outside the workspace: " + opened.error().message());
  }
  return WorkspacePath{root_ / relative, relative};
}

Result<WorkspaceEntry> Workspace::inspect(const WorkspacePath& path) const {
  Fd fd(KEEL_TRY(open_beneath(path.relative, O_PATH)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail(codes::kWorkspaceIo,
                "cannot inspect " + shown_path(path.relative) + ": " + errno_message(errno));
  }
  WorkspaceEntry entry{path.relative, type_of(st.st_mode), 0};
  if (entry.type == WorkspaceEntry::Type::kFile) entry.size = static_cast<uint64_t>(st.st_size);
  return entry;
}

namespace {

// One folder of a walk: `folder` is open for reading; `relative` is its name. See Workspace::walk.
Result<bool> walk_folder(Fd folder, const std::string& relative, bool recursive,
                         const CancellationToken& cancel,
                         const std::function<bool(const WorkspaceEntry&)>& visit) {
  std::vector<std::string> names;
  {
    // fdopendir takes its descriptor; give it a copy so `folder` stays usable for the *at() calls.
    const int copy = ::dup(folder.get());
    DIR* dir = copy >= 0 ? ::fdopendir(copy) : nullptr;
    if (dir == nullptr) {
      if (copy >= 0) ::close(copy);
      return fail(codes::kWorkspaceIo, "cannot list " + shown_path(relative) + ": " + errno_message(errno));
    }
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (cancel.is_cancelled()) return fail(cancelled_error(cancel));
    struct stat st {};
    if (::fstatat(folder.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone since
    WorkspaceEntry entry{child_of(relative, name), type_of(st.st_mode), 0};
    if (entry.type == WorkspaceEntry::Type::kFile) entry.size = static_cast<uint64_t>(st.st_size);
    if (!visit(entry)) return false;
    if (recursive && entry.type == WorkspaceEntry::Type::kFolder) {
      // O_NOFOLLOW: had the folder been swapped for a symlink since fstatat, this fails instead.
      Fd child(::openat(folder.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (child.get() < 0) continue;
      if (!KEEL_TRY(walk_folder(std::move(child), entry.relative, true, cancel, visit))) return false;
    }
  }
  return true;
}

}  // namespace

Result<bool> Workspace::walk(const WorkspacePath& folder, bool recursive, const CancellationToken& cancel,
                             const std::function<bool(const WorkspaceEntry&)>& visit) const {
  Fd fd(KEEL_TRY(open_beneath(folder.relative, O_RDONLY | O_DIRECTORY)));
  hook("walk.folder_opened");
  return walk_folder(std::move(fd), folder.relative, recursive, cancel, visit);
}

Result<std::string> Workspace::read_text(const WorkspacePath& file) const {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a regular file.
  Fd fd(KEEL_TRY(open_beneath(file.relative, O_RDONLY | O_NONBLOCK)));
  hook("read.opened");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return fail(codes::kWorkspaceIo,
                "cannot read " + shown_path(file.relative) + ": " + errno_message(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is a folder, not a file");
  }
  if (!S_ISREG(st.st_mode)) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is not a regular file");
  }
  if (st.st_nlink > 1 && st.st_uid != owner_) {
    return fail(codes::kWorkspacePathOutside,
                shown_path(file.relative) +
                    " has other hard links and belongs to another user than the workspace; it may be a file "
                    "from outside the workspace, so it is not read");
  }
  if (static_cast<uint64_t>(st.st_size) > limits_.max_file_bytes) {
    return fail(codes::kWorkspaceTooLarge, shown_path(file.relative) + " is " + std::to_string(st.st_size) +
                                               " bytes; files larger than " +
                                               std::to_string(limits_.max_file_bytes) +
                                               " bytes are not read");
  }
  // Bounded even if the file grew since fstat(): read one byte past the limit to notice.
  std::string content;
  content.resize(static_cast<size_t>(limits_.max_file_bytes) + 1);
  size_t filled = 0;
  while (filled < content.size()) {
    const ssize_t n = ::read(fd.get(), content.data() + filled, content.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(codes::kWorkspaceIo,
                  "cannot read " + shown_path(file.relative) + ": " + errno_message(errno));
    }
    if (n == 0) break;
    filled += static_cast<size_t>(n);
  }
  content.resize(filled);
  if (content.size() > limits_.max_file_bytes) {
    return fail(codes::kWorkspaceTooLarge, shown_path(file.relative) + " is larger than " +
                                               std::to_string(limits_.max_file_bytes) + " bytes");
  }
  if (content.find('\0') != std::string::npos) {
    return fail(codes::kWorkspaceBinaryFile, shown_path(file.relative) + " is a binary file, not text");
  }
  return content;
}

Result<WorkspaceWrite> Workspace::write_atomically(const WorkspacePath& file,
                                                   std::string_view content) const {
  const size_t slash = file.relative.rfind('/');
  const std::string folder_name = slash == std::string::npos ? "." : file.relative.substr(0, slash);
  const std::string name = slash == std::string::npos ? file.relative : file.relative.substr(slash + 1);
  if (file.relative == "." || name.empty()) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " names a folder, not a file");
  }
  Fd folder(KEEL_TRY(open_folder_creating(folder_name)));
  hook("write.folder_opened");

  // From here on every name is looked up in `folder` only, so whatever happens to the path above it, the
  // temporary file and the rename stay in this folder.
  WorkspaceWrite outcome;
  mode_t mode = 0;
  struct stat st {};
  if (::fstatat(folder.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is a folder, not a file");
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
      return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is not a regular file");
    }
    outcome.replaced = true;
    if (S_ISREG(st.st_mode)) {
      outcome.previous_bytes = static_cast<uint64_t>(st.st_size);
      mode = st.st_mode & 07777;
    }
  } else if (errno != ENOENT) {
    return fail(codes::kWorkspaceIo,
                "cannot inspect " + shown_path(file.relative) + ": " + errno_message(errno));
  }

  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temporary = temporary_name(name);
    // 0666 & ~umask, like any new file; an existing file's own bits are copied below.
    fd =
        ::openat(folder.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    return fail(codes::kWorkspaceIo, "cannot create a temporary file beside " + shown_path(file.relative) +
                                         ": " + errno_message(errno));
  }
  Fd descriptor(fd);
  const auto discard = [&](Error error) {
    ::unlinkat(folder.get(), temporary.c_str(), 0);
    return fail(std::move(error));
  };
  if (mode != 0 && ::fchmod(descriptor.get(), mode) != 0) {
    return discard(Error(codes::kWorkspaceIo, "cannot copy the permissions of " + shown_path(file.relative) +
                                                  ": " + errno_message(errno)));
  }
  if (auto written = write_all(descriptor.get(), content); !written) {
    return discard(written.error().with_context(shown_path(file.relative)));
  }
  if (::fsync(descriptor.get()) != 0 || descriptor.close() != 0) {
    return discard(Error(codes::kWorkspaceIo,
                         "cannot flush " + shown_path(file.relative) + ": " + errno_message(errno)));
  }
  if (::renameat(folder.get(), temporary.c_str(), folder.get(), name.c_str()) != 0) {
    return discard(Error(codes::kWorkspaceIo,
                         "cannot replace " + shown_path(file.relative) + ": " + errno_message(errno)));
  }
  // Make the rename itself durable. Best effort: the new content is complete either way.
  (void)::fsync(folder.get());
  return outcome;
}

}  // namespace keel::builtin
