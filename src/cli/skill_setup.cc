#include "cli/skill_setup.h"

namespace keel::cli {

std::unique_ptr<skills::DirectorySkillCatalog> open_skill_catalog(const config::SkillsConfig& config) {
  if (!config.enabled) return nullptr;
  skills::SkillDirectories dirs;
  if (!config.user_dir.empty()) dirs.user_dir = config.user_dir;
  if (!config.project_dir.empty()) dirs.project_dir = config.project_dir;
  return std::make_unique<skills::DirectorySkillCatalog>(dirs);
}

}  // namespace keel::cli
