// testing/fake_skill_catalog.h — a SkillCatalog held in memory, for engine tests: skills are added by hand,
// each with its instructions; a skill's digest is the SHA-256 of its description and instructions, so a
// test "edits" a skill by building a catalog with other instructions. Not thread-safe while being filled;
// read-only once given to an engine.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "keel/skills.h"
#include "util/sha256.h"

namespace keel::testing {

class FakeSkillCatalog final : public SkillCatalog {
 public:
  void add(std::string name, std::string description, std::string instructions,
           SkillSource source = SkillSource::kUser) {
    Skill skill;
    skill.name = name;
    skill.description = std::move(description);
    skill.source = source;
    skill.dir = "/skills/" + name;
    skill.digest = sha256_hex(skill.description + '\n' + instructions);
    skill.files.push_back(SkillFileEntry{"SKILL.md", skill.digest, instructions.size(), true});
    instructions_[name] = std::move(instructions);
    skills_.push_back(std::move(skill));
  }

  const std::vector<Skill>& skills() const override { return skills_; }
  const std::vector<SkillProblem>& problems() const override { return problems_; }
  Result<std::string> read(std::string_view name, std::string_view relative_path) const override {
    const auto found = instructions_.find(std::string(name));
    if (found == instructions_.end()) return fail("skill.not_found", "no skill " + std::string(name));
    if (!relative_path.empty() && relative_path != "SKILL.md") {
      return fail("skill.file_not_found", "no file " + std::string(relative_path));
    }
    return found->second;
  }

 private:
  std::vector<Skill> skills_;
  std::vector<SkillProblem> problems_;
  std::map<std::string, std::string> instructions_;
};

}  // namespace keel::testing
