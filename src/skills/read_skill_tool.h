// skills/read_skill_tool.h — `read_skill` {name, path?}: the instructions or a file of a skill.
//
// A read-only builtin tool (level builtin, effects read): without `path` it returns the skill's instructions
// (SKILL.md below its front matter) and the list of its other files; with `path`, that file's text. What it
// refuses is SkillCatalog::read()'s: an unknown skill or file, a path leaving the skill's folder or going
// through a symlink, a binary file, a file that changed on disk since the catalog loaded it (skill.changed:
// a run reads only the content its snapshot bound, spec §5).
//
// The catalog must outlive the tool.
#pragma once

#include "keel/skills.h"
#include "keel/tool.h"

namespace keel::skills {

class ReadSkillTool final : public AgentTool {
 public:
  explicit ReadSkillTool(const SkillCatalog& catalog);

  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, nlohmann::json params,
               std::function<void(Result<ToolResult>)> done) override;

 private:
  const SkillCatalog& catalog_;
  ToolSpec spec_;
};

}  // namespace keel::skills
