#include "skills/directory_skill_catalog.h"

#include <map>
#include <system_error>

#include "skills/skill_errors.h"
#include "util/sha256.h"

namespace keel::skills {
namespace {

namespace fs = std::filesystem;

// `relative` as a '/'-separated path inside the skill, or skill.path_outside.
Result<std::string> normalized_inside(std::string_view skill, std::string_view relative) {
  const fs::path path = fs::path(std::string(relative)).lexically_normal();
  const std::string text = path.generic_string();
  if (path.is_absolute() || text == ".." || text.starts_with("../") || text == ".") {
    return fail(codes::kSkillPathOutside, "'" + std::string(relative) + "' is not a file inside skill " +
                                              std::string(skill) + "; give a path relative to its folder");
  }
  return text;
}

// Whether a component of `relative` below `dir` is a symlink on disk (the file it names lies elsewhere).
bool through_symlink(const fs::path& dir, const std::string& relative) {
  fs::path at = dir;
  std::error_code ec;
  for (const fs::path& part : fs::path(relative)) {
    at /= part;
    const fs::file_status status = fs::symlink_status(at, ec);
    if (ec || !fs::exists(status)) return false;
    if (fs::is_symlink(status)) return true;
  }
  return false;
}

}  // namespace

DirectorySkillCatalog::DirectorySkillCatalog(const SkillDirectories& dirs, const SkillLimits& limits)
    : limits_(limits) {
  std::map<std::string, Skill> by_name;
  std::vector<SkillProblem>& problems = problems_;
  const std::pair<const std::optional<fs::path>*, SkillSource> order[] = {
      {&dirs.user_dir, SkillSource::kUser}, {&dirs.project_dir, SkillSource::kProject}};
  for (const auto& [dir, source] : order) {
    if (!dir->has_value()) continue;
    SkillScan scan = scan_skill_directory(**dir, source, limits);
    // Later directories win: the project's skill replaces the user's of the same name.
    for (Skill& skill : scan.skills) by_name.insert_or_assign(skill.name, std::move(skill));
    for (SkillProblem& problem : scan.problems) problems.push_back(std::move(problem));
  }
  for (auto& [name, skill] : by_name) {
    if (skills_.size() >= limits.max_skills) {
      problems.push_back(SkillProblem{
          skill.dir, skill.source,
          Error(codes::kSkillTooMany, skill.dir + ": more than " + std::to_string(limits.max_skills) +
                                          " skills in all; this one is skipped")});
      continue;
    }
    skills_.push_back(std::move(skill));
  }
}

Result<std::string> DirectorySkillCatalog::read(std::string_view name, std::string_view relative_path) const {
  const Skill* skill = find(name);
  if (skill == nullptr) {
    return fail(codes::kSkillNotFound, "there is no skill named '" + std::string(name) + "'");
  }
  const std::string relative =
      relative_path.empty() ? std::string("SKILL.md") : KEEL_TRY(normalized_inside(name, relative_path));
  const SkillFileEntry* entry = nullptr;
  for (const SkillFileEntry& file : skill->files) {
    if (file.path == relative) entry = &file;
  }
  if (entry == nullptr) {
    if (through_symlink(skill->dir, relative)) {
      return fail(codes::kSkillPathOutside,
                  "'" + relative + "' of skill " + skill->name + " is a symlink; skills never follow one");
    }
    std::string listing;
    for (const SkillFileEntry& file : skill->files) listing += (listing.empty() ? "" : ", ") + file.path;
    return fail(codes::kSkillFileNotFound,
                "skill " + skill->name + " has no file '" + relative + "'; its files: " + listing);
  }
  if (!entry->text) {
    return fail(codes::kSkillBinaryFile, "'" + relative + "' of skill " + skill->name +
                                             " is not text; read_skill returns text files only");
  }
  const fs::path path = fs::path(skill->dir) / relative;
  Result<std::string> bytes = read_bounded(path, entry->bytes);
  if (!bytes || sha256_hex(*bytes) != entry->sha256 || through_symlink(skill->dir, relative)) {
    return fail(codes::kSkillChanged, path.string() + " changed since keel loaded skill " + skill->name +
                                          "; restart keel to load the skill as it is now");
  }
  if (relative != "SKILL.md") return std::move(*bytes);
  // The instructions: what the model was not already told in its system prompt.
  SkillDocument doc = KEEL_TRY(parse_skill_document(*bytes, path.string(), limits_.front_matter));
  return std::move(doc.body);
}

}  // namespace keel::skills
