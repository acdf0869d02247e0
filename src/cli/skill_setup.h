// cli/skill_setup.h — the skills of a keel process, from the [skills] configuration (docs/skills.md).
//
// One mapping from config::SkillsConfig to a loaded catalog, used by the engine host (which offers the
// skills to its runs) and by `keel skills list`, so both see the same skills and the same problems.
#pragma once

#include <memory>

#include "config/config.h"
#include "skills/directory_skill_catalog.h"

namespace keel::cli {

// The catalog of the configured directories ("" = that directory is off), loaded now; nullptr when
// [skills] enabled = false.
std::unique_ptr<skills::DirectorySkillCatalog> open_skill_catalog(const config::SkillsConfig& config);

}  // namespace keel::cli
