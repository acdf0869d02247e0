// keel skills list: the skills keel would offer its runs now, where each comes from, and the folders that
// could not be loaded (docs/skills.md, docs/cli.md).
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/commands.h"
#include "cli/skill_setup.h"
#include "util/terminal_text.h"

namespace keel::cli {

using nlohmann::json;

int skills_command(const CommandContext& context, const SkillsOptions& options) {
  std::ostream& out = *context.out;
  const std::unique_ptr<skills::DirectorySkillCatalog> catalog = open_skill_catalog(context.config.skills);
  if (options.json) {
    json listed = {{"enabled", catalog != nullptr}, {"skills", json::array()}, {"problems", json::array()}};
    if (catalog) {
      for (const Skill& skill : catalog->skills()) {
        json files = json::array();
        for (const SkillFileEntry& file : skill.files) files.push_back(file.path);
        listed["skills"].push_back({{"name", skill.name},
                                    {"description", skill.description},
                                    {"source", to_string(skill.source)},
                                    {"path", skill.dir},
                                    {"digest", skill.digest},
                                    {"files", std::move(files)}});
      }
      for (const SkillProblem& problem : catalog->problems()) {
        listed["problems"].push_back({{"path", problem.path},
                                      {"source", to_string(problem.source)},
                                      {"code", problem.error.code()},
                                      {"message", problem.error.message()}});
      }
    }
    // Paths come from the disk and may not be UTF-8: replaced, never a throw.
    out << listed.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  if (!catalog) {
    out << "Skills are off ([skills] enabled = false).\n";
    return kExitOk;
  }
  const config::SkillsConfig& dirs = context.config.skills;
  out << "user skills:    " << (dirs.user_dir.empty() ? "(off)" : terminal_safe(dirs.user_dir.string()))
      << "\nproject skills: "
      << (dirs.project_dir.empty() ? "(off)" : terminal_safe(dirs.project_dir.string())) << "\n\n";
  if (catalog->skills().empty()) out << "No skills.\n";
  for (const Skill& skill : catalog->skills()) {
    out << skill.name << " (" << to_string(skill.source) << ")\n"
        << "  " << terminal_safe(skill.description) << "\n"
        << "  " << terminal_safe(skill.dir) << "\n";
  }
  if (!catalog->problems().empty()) {
    out << "\nNot loaded (" << catalog->problems().size() << "):\n";
    for (const SkillProblem& problem : catalog->problems()) {
      out << "  " << problem.error.code() << ": " << terminal_safe(problem.error.message()) << "\n";
    }
  }
  return catalog->problems().empty() ? kExitOk : kExitFailed;
}

}  // namespace keel::cli
