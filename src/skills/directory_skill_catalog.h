// skills/directory_skill_catalog.h — the SkillCatalog (keel/skills.h) of a user's and a project's skill
// directories, loaded once.
//
// Both directories are scanned (skills/skill_loader.h) when the catalog is built; a skill of the project's
// directory replaces the user's skill of the same name (the project knows its own conventions best, and a
// person who wants their own version renames it). A bad skill is a problem of the catalog, never a failure of
// the whole: the other skills still load. After load() the catalog never changes, so any thread may read it.
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "keel/skills.h"
#include "skills/skill_loader.h"

namespace keel::skills {

struct SkillDirectories {
  std::optional<std::filesystem::path> user_dir;     // nullopt: no user skills
  std::optional<std::filesystem::path> project_dir;  // nullopt: no project skills
};

class DirectorySkillCatalog final : public SkillCatalog {
 public:
  // Scans both directories now; never fails (what cannot be loaded is in problems()).
  explicit DirectorySkillCatalog(const SkillDirectories& dirs, const SkillLimits& limits = {});

  const std::vector<Skill>& skills() const override { return skills_; }
  const std::vector<SkillProblem>& problems() const override { return problems_; }
  Result<std::string> read(std::string_view name, std::string_view relative_path) const override;

 private:
  std::vector<Skill> skills_;
  std::vector<SkillProblem> problems_;
  SkillLimits limits_;
};

}  // namespace keel::skills
