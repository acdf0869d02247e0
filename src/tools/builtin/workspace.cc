// tools/builtin/workspace.cc — path confinement, bounded reads and atomic writes for the file tools.
#include "tools/builtin/workspace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <system_error>
#include <utility>

#include "keel/error_codes.h"
#include "tools/builtin/tool_support.h"
#include "tools/tool_errors.h"

namespace keel::builtin {

namespace fs = std::filesystem;

namespace {

// How a path is named in messages: the model's own spelling, made printable.
std::string shown_path(std::string_view path) { return "\"" + valid_utf8(path) + "\""; }

std::string errno_message(int error) { return std::error_code(error, std::generic_category()).message(); }

// Closes a file descriptor on every path out of write_atomically.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now and reports close()'s own failure (on some filesystems the first report of a write error).
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

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

// A fresh name in `folder` for the temporary file; O_EXCL at open() is what guarantees it is unused.
fs::path temporary_name(const fs::path& folder, const fs::path& target_name) {
  static std::atomic<uint64_t> counter{0};
  std::string stem = target_name.string().substr(0, 100);  // stay well under NAME_MAX with the suffix
  return folder / ("." + stem + ".keel-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
}

}  // namespace

Result<std::shared_ptr<const Workspace>> Workspace::open(const fs::path& root, WorkspaceLimits limits) {
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
  if (!fs::is_directory(canonical, ec)) {
    return fail(codes::kWorkspaceNotFound,
                "workspace root " + shown_path(root.string()) + " is not a folder");
  }
  return std::shared_ptr<const Workspace>(new Workspace(canonical, limits));
}

bool Workspace::contains(const fs::path& canonical) const {
  const auto mismatch = std::mismatch(root_.begin(), root_.end(), canonical.begin(), canonical.end());
  return mismatch.first == root_.end();
}

std::string Workspace::relative(const fs::path& absolute) const {
  std::string relative = absolute.lexically_relative(root_).generic_string();
  while (relative.size() > 1 && relative.back() == '/') relative.pop_back();
  return relative.empty() ? "." : relative;
}

Result<WorkspacePath> Workspace::resolve(std::string_view requested) const {
  if (requested.find('\0') != std::string_view::npos) {
    return fail(codes::kInvalidArgument, "path " + shown_path(requested) + " contains a NUL character");
  }
  const fs::path path = requested.empty() ? fs::path(".") : fs::path(std::string(requested));
  const fs::path candidate = path.is_absolute() ? path : root_ / path;
  std::error_code ec;
  // Follows symlinks through every component that exists and normalizes the rest lexically, so both a
  // "../" and a symlink pointing elsewhere show up as a result outside the root.
  const fs::path resolved = fs::weakly_canonical(candidate, ec);
  if (ec) return fail(codes::kWorkspaceIo, "cannot resolve " + shown_path(requested) + ": " + ec.message());
  if (!contains(resolved)) {
    return fail(codes::kWorkspacePathOutside,
                "path " + shown_path(requested) +
                    " is outside the workspace; use a path relative to the workspace root");
  }
  return WorkspacePath{resolved, relative(resolved)};
}

Result<WorkspacePath> Workspace::resolve_for_write(std::string_view requested) const {
  WorkspacePath path = KEEL_TRY(resolve(requested));
  if (path.absolute == root_ || !path.absolute.has_filename()) {
    return fail(codes::kWorkspaceNotAFile, "path " + shown_path(requested) + " names a folder, not a file");
  }
  std::error_code ec;
  const fs::path parent = fs::weakly_canonical(path.absolute.parent_path(), ec);
  if (ec)
    return fail(codes::kWorkspaceIo,
                "cannot resolve the folder of " + shown_path(requested) + ": " + ec.message());
  if (!contains(parent)) {
    return fail(codes::kWorkspacePathOutside,
                "the folder of " + shown_path(requested) + " is outside the workspace");
  }
  return path;
}

Result<std::string> Workspace::read_text(const WorkspacePath& file) const {
  std::error_code ec;
  const fs::file_status status = fs::status(file.absolute, ec);
  if (status.type() == fs::file_type::not_found) {
    return fail(codes::kWorkspaceNotFound, shown_path(file.relative) + " does not exist");
  }
  if (ec) return fail(codes::kWorkspaceIo, "cannot read " + shown_path(file.relative) + ": " + ec.message());
  if (status.type() == fs::file_type::directory) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is a folder, not a file");
  }
  if (status.type() != fs::file_type::regular) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is not a regular file");
  }
  const uintmax_t size = fs::file_size(file.absolute, ec);
  if (ec) return fail(codes::kWorkspaceIo, "cannot read " + shown_path(file.relative) + ": " + ec.message());
  if (size > limits_.max_file_bytes) {
    return fail(codes::kWorkspaceTooLarge,
                shown_path(file.relative) + " is " + std::to_string(size) + " bytes; files larger than " +
                    std::to_string(limits_.max_file_bytes) + " bytes are not read");
  }
  std::ifstream in(file.absolute, std::ios::binary);
  if (!in)
    return fail(codes::kWorkspaceIo,
                "cannot open " + shown_path(file.relative) + ": " + errno_message(errno));
  // Bounded even if the file grew since file_size(): read one byte past the limit to notice.
  std::string content;
  content.resize(static_cast<size_t>(limits_.max_file_bytes) + 1);
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  if (in.bad())
    return fail(codes::kWorkspaceIo,
                "cannot read " + shown_path(file.relative) + ": " + errno_message(errno));
  content.resize(static_cast<size_t>(in.gcount()));
  if (content.size() > limits_.max_file_bytes) {
    return fail(codes::kWorkspaceTooLarge, shown_path(file.relative) + " is larger than " +
                                               std::to_string(limits_.max_file_bytes) + " bytes");
  }
  if (content.find('\0') != std::string::npos) {
    return fail(codes::kWorkspaceBinaryFile, shown_path(file.relative) + " is a binary file, not text");
  }
  return content;
}

Result<void> Workspace::write_atomically(const WorkspacePath& file, std::string_view content) const {
  if (file.absolute == root_ || !file.absolute.has_filename()) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " names a folder, not a file");
  }
  std::error_code ec;
  const fs::path wanted_parent = file.absolute.parent_path();
  fs::create_directories(wanted_parent, ec);
  if (ec) {
    return fail(codes::kWorkspaceIo,
                "cannot create the folder of " + shown_path(file.relative) + ": " + ec.message());
  }
  // Checked again now that the folders exist: one of them may be a symlink that resolve() could not see
  // through while it was missing.
  const fs::path parent = fs::canonical(wanted_parent, ec);
  if (ec)
    return fail(codes::kWorkspaceIo,
                "cannot resolve the folder of " + shown_path(file.relative) + ": " + ec.message());
  if (!contains(parent)) {
    return fail(codes::kWorkspacePathOutside,
                "the folder of " + shown_path(file.relative) + " is outside the workspace");
  }
  const fs::path target = parent / file.absolute.filename();

  const fs::file_status existing = fs::status(target, ec);
  if (ec && existing.type() != fs::file_type::not_found) {
    return fail(codes::kWorkspaceIo, "cannot inspect " + shown_path(file.relative) + ": " + ec.message());
  }
  if (existing.type() == fs::file_type::directory) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is a folder, not a file");
  }
  if (fs::exists(existing) && existing.type() != fs::file_type::regular) {
    return fail(codes::kWorkspaceNotAFile, shown_path(file.relative) + " is not a regular file");
  }

  fs::path temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temporary = temporary_name(parent, target.filename());
    // 0666 & ~umask, like any new file; an existing file's own bits are copied below.
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    return fail(codes::kWorkspaceIo, "cannot create a temporary file beside " + shown_path(file.relative) +
                                         ": " + errno_message(errno));
  }
  FileDescriptor descriptor(fd);
  const auto discard = [&](Error error) {
    ::unlink(temporary.c_str());
    return fail(std::move(error));
  };
  if (fs::exists(existing)) {
    const auto mode = static_cast<mode_t>(existing.permissions() & fs::perms::mask);
    if (::fchmod(descriptor.get(), mode) != 0) {
      return discard(Error(codes::kWorkspaceIo, "cannot copy the permissions of " +
                                                    shown_path(file.relative) + ": " + errno_message(errno)));
    }
  }
  if (auto written = write_all(descriptor.get(), content); !written) {
    return discard(written.error().with_context(shown_path(file.relative)));
  }
  if (::fsync(descriptor.get()) != 0 || descriptor.close() != 0) {
    return discard(Error(codes::kWorkspaceIo,
                         "cannot flush " + shown_path(file.relative) + ": " + errno_message(errno)));
  }
  if (::rename(temporary.c_str(), target.c_str()) != 0) {
    return discard(Error(codes::kWorkspaceIo,
                         "cannot replace " + shown_path(file.relative) + ": " + errno_message(errno)));
  }
  // Make the rename itself durable. Best effort: the new content is complete either way.
  const int folder = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder >= 0) {
    (void)::fsync(folder);
    ::close(folder);
  }
  return {};
}

}  // namespace keel::builtin
