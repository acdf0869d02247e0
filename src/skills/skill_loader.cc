#include "skills/skill_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "skills/skill_errors.h"
#include "util/sha256.h"
#include "util/utf8.h"

namespace keel::skills {
namespace {

namespace fs = std::filesystem;

// Closes a descriptor on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

struct Walk {
  const fs::path& dir;
  const SkillLimits& limits;
  std::vector<std::pair<std::string, fs::path>> files;  // relative path, full path
};

// Collects the regular files below `folder` (relative path `prefix`), without following symlinks.
Result<void> collect(Walk& walk, const fs::path& folder, const std::string& prefix, size_t depth) {
  std::error_code ec;
  std::vector<fs::directory_entry> entries;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    entries.push_back(*it);
    // Bounded before sorting: a folder with a million entries is refused, not read whole.
    if (entries.size() > walk.limits.max_files * 4) {
      return fail(codes::kSkillTooLarge, folder.string() + ": holds more than " +
                                             std::to_string(walk.limits.max_files * 4) + " entries");
    }
  }
  if (ec) return fail(codes::kSkillIo, folder.string() + ": cannot be listed: " + ec.message());
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path().filename() < b.path().filename(); });
  for (const fs::directory_entry& entry : entries) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.front() == '.' || !utf8_valid(name)) continue;
    const fs::file_status status = entry.symlink_status(ec);
    if (ec || fs::is_symlink(status)) continue;
    const std::string relative = prefix.empty() ? name : prefix + "/" + name;
    if (fs::is_directory(status)) {
      if (depth >= walk.limits.max_depth) {
        return fail(codes::kSkillTooLarge, entry.path().string() + ": nests deeper than " +
                                               std::to_string(walk.limits.max_depth) +
                                               " folders below the skill");
      }
      KEEL_TRY(collect(walk, entry.path(), relative, depth + 1));
    } else if (fs::is_regular_file(status)) {
      if (relative == "SKILL.md") continue;  // read first, on its own
      walk.files.emplace_back(relative, entry.path());
      if (walk.files.size() + 1 > walk.limits.max_files) {
        return fail(codes::kSkillTooLarge, walk.dir.string() + ": holds more than " +
                                               std::to_string(walk.limits.max_files) + " files");
      }
    }
  }
  return {};
}

}  // namespace

bool is_text(std::string_view bytes) {
  return bytes.find('\0') == std::string_view::npos && utf8_valid(bytes);
}

Result<std::string> read_bounded(const fs::path& path, size_t max_bytes) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    return fail(codes::kSkillIo, path.string() + ": cannot be opened: " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail(codes::kSkillIo, path.string() + ": is not a regular file");
  }
  std::string bytes;
  bytes.resize(max_bytes + 1);
  size_t have = 0;
  while (have < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + have, bytes.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(codes::kSkillIo, path.string() + ": cannot be read: " + std::strerror(errno));
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  bytes.resize(have);
  return bytes;
}

std::string skill_digest(const std::vector<SkillFileEntry>& files) {
  std::string listing;
  for (const SkillFileEntry& file : files) listing += file.path + '\n' + file.sha256 + '\n';
  return sha256_hex(listing);
}

Result<Skill> load_skill(const fs::path& dir, SkillSource source, const SkillLimits& limits) {
  std::error_code ec;
  fs::path absolute = fs::absolute(dir, ec);
  if (ec) absolute = dir;
  absolute = absolute.lexically_normal();
  if (!absolute.has_filename()) absolute = absolute.parent_path();  // "skills/x/" names folder x
  const fs::path skill_md = absolute / "SKILL.md";
  const std::string file = skill_md.string();
  const fs::file_status status = fs::symlink_status(skill_md, ec);
  if (ec || !fs::exists(status)) {
    return fail(codes::kSkillMissingSkillMd, absolute.string() + ": a skill folder must hold a SKILL.md");
  }
  if (!fs::is_regular_file(status)) {
    return fail(codes::kSkillIo, file + ": is not a regular file (a symlink is not followed)");
  }
  std::string text = KEEL_TRY(read_bounded(skill_md, limits.max_skill_md_bytes));
  if (text.size() > limits.max_skill_md_bytes) {
    return fail(codes::kSkillTooLarge,
                file + ": is larger than " + std::to_string(limits.max_skill_md_bytes) + " bytes");
  }
  if (!is_text(text)) return fail(codes::kSkillBadFrontMatter, file + ": is not UTF-8 text");
  SkillDocument doc = KEEL_TRY(parse_skill_document(text, file, limits.front_matter));
  const std::string folder = absolute.filename().string();
  if (doc.name != folder) {
    return fail(codes::kSkillBadName, file + ": the skill's name '" + doc.name +
                                          "' must be the name of its folder ('" +
                                          (utf8_valid(folder) ? folder : std::string("?")) + "')");
  }

  Skill skill;
  skill.name = std::move(doc.name);
  skill.description = std::move(doc.description);
  skill.source = source;
  skill.dir = absolute.string();
  skill.files.push_back(SkillFileEntry{"SKILL.md", sha256_hex(text), text.size(), true});
  size_t total = text.size();
  Walk walk{absolute, limits, {}};
  KEEL_TRY(collect(walk, absolute, "", 0));
  for (const auto& [relative, path] : walk.files) {
    std::string bytes = KEEL_TRY(read_bounded(path, limits.max_file_bytes));
    if (bytes.size() > limits.max_file_bytes) {
      return fail(codes::kSkillTooLarge,
                  path.string() + ": is larger than " + std::to_string(limits.max_file_bytes) + " bytes");
    }
    total += bytes.size();
    if (total > limits.max_skill_bytes) {
      return fail(codes::kSkillTooLarge, absolute.string() + ": its files hold more than " +
                                             std::to_string(limits.max_skill_bytes) + " bytes");
    }
    skill.files.push_back(SkillFileEntry{relative, sha256_hex(bytes), bytes.size(), is_text(bytes)});
  }
  skill.digest = skill_digest(skill.files);
  return skill;
}

SkillScan scan_skill_directory(const fs::path& root, SkillSource source, const SkillLimits& limits) {
  SkillScan scan;
  std::error_code ec;
  const fs::file_status status = fs::status(root, ec);
  if (!fs::exists(status)) return scan;
  auto problem = [&](std::string path, Error error) {
    scan.problems.push_back(SkillProblem{std::move(path), source, std::move(error)});
  };
  if (!fs::is_directory(status)) {
    problem(root.string(), Error(codes::kSkillIo, root.string() + ": is not a folder of skills"));
    return scan;
  }
  // Folder names only, bounded: a skill directory with a million entries is not read whole.
  const size_t max_entries = limits.max_skills * 8;
  std::vector<fs::path> folders;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.front() == '.') continue;
    std::error_code entry_ec;
    if (!it->is_directory(entry_ec)) continue;  // follows a symlink the person placed there
    folders.push_back(it->path());
    if (folders.size() >= max_entries) break;
  }
  if (ec) {
    problem(root.string(), Error(codes::kSkillIo, root.string() + ": cannot be listed: " + ec.message()));
  }
  std::sort(folders.begin(), folders.end());
  for (const fs::path& folder : folders) {
    if (scan.skills.size() >= limits.max_skills) {
      problem(folder.string(),
              Error(codes::kSkillTooMany, root.string() + ": holds more than " +
                                              std::to_string(limits.max_skills) + " skills; " +
                                              folder.string() + " and the folders after it are skipped"));
      break;
    }
    Result<Skill> skill = load_skill(folder, source, limits);
    if (skill) {
      scan.skills.push_back(std::move(*skill));
    } else {
      problem((folder / "SKILL.md").string(), std::move(skill.error()));
    }
  }
  return scan;
}

}  // namespace keel::skills
