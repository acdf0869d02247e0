#include "skills/read_skill_tool.h"

namespace keel::skills {

using nlohmann::json;

ReadSkillTool::ReadSkillTool(const SkillCatalog& catalog) : catalog_(catalog) {
  spec_.name = kReadSkillToolName;
  spec_.label = "Read skill";
  spec_.description =
      "Read a skill listed in the system prompt: without `path`, its instructions and the list of its "
      "files; with `path` (relative to the skill's folder, as listed), that file. Read a skill's "
      "instructions before doing a task it covers.";
  spec_.parameters = {
      {"type", "object"},
      {"properties",
       {{"name", {{"type", "string"}, {"description", "the skill's name, as listed"}}},
        {"path", {{"type", "string"}, {"description", "a file of the skill, relative to its folder"}}}}},
      {"required", json::array({"name"})},
      {"additionalProperties", false}};
  spec_.level = ToolLevel::kBuiltin;
  spec_.effects = ToolEffects::kRead;
}

void ReadSkillTool::execute(ToolCallContext context, json params,
                            std::function<void(Result<ToolResult>)> done) {
  (void)context;
  const std::string name = params.value("name", "");
  const std::string path = params.value("path", "");
  Result<std::string> text = catalog_.read(name, path);
  if (!text) {
    done(std::unexpected(std::move(text.error())));
    return;
  }
  if (!path.empty() && path != "SKILL.md") {
    done(text_result(std::move(*text)));
    return;
  }
  const Skill* skill = catalog_.find(name);
  std::string files;
  for (const SkillFileEntry& file : skill->files) {
    if (file.path == "SKILL.md") continue;
    files += "\n- " + file.path + (file.text ? "" : " (binary, not readable here)");
  }
  std::string out = "Skill " + skill->name + " (" + std::string(to_string(skill->source)) + ")\n";
  out += files.empty() ? "It has no other files.\n" : "Its files (read them with `path`):" + files + "\n";
  out += "\n" + *text;
  done(text_result(std::move(out)));
}

}  // namespace keel::skills
