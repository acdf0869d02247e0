// keel/skills.h — SkillCatalog: the skills a run may use (spec §5 "Skill content"), as the engine sees them.
//
// A skill is a folder holding a SKILL.md (a name and a description in YAML front matter, instructions below)
// and optional files beside it (docs/skills.md). The model is told each skill's name and description in the
// run's system prompt and reads a skill's body and files through the read-only builtin tool `read_skill`.
//
// What a catalog guarantees:
//   - skills() is fixed for the catalog's life: a catalog is loaded once (at start-up, like the
//     configuration) and never rescans, so every run of one process binds the same skills, and the catalog
//     may be read from any thread without locking.
//   - Each skill's digest is SHA-256 over its SKILL.md and every file beside it (their relative paths and
//     contents); a run's environment snapshot records it, and verify_environment() refuses, with
//     environment.drift naming the skill, a run whose skill changed or disappeared since.
//   - read() serves a file only while its bytes on disk still match the digest the catalog loaded
//     (skill.changed otherwise), so a run never reads content it did not bind.
//
// The engine reaches skills only through this interface (EngineDeps::skills, optional: without it runs have
// no skills and their snapshots are those of a keel without skills). Implementations live in src/skills/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel {

// The builtin tool through which the model reads skills (src/skills/read_skill_tool.h). A run is told of
// skills only when its tool catalog holds it.
inline constexpr char kReadSkillToolName[] = "read_skill";

// Where a skill was found. A project's skill replaces the user's skill of the same name.
enum class SkillSource { kUser, kProject };
inline std::string_view to_string(SkillSource source) {
  return source == SkillSource::kProject ? "project" : "user";
}

struct SkillFileEntry {
  std::string path;    // relative to the skill's folder, '/'-separated ("SKILL.md", "scripts/run.sh")
  std::string sha256;  // lowercase hex of its bytes
  size_t bytes = 0;
  bool text = true;  // UTF-8 text without NUL bytes; read() refuses other files (skill.binary_file)
};

struct Skill {
  std::string name;         // [a-z0-9-]{1,64}, the folder's name
  std::string description;  // for the model: what the skill is for and when to use it
  SkillSource source = SkillSource::kUser;
  std::string dir;                    // the skill's folder, absolute
  std::string digest;                 // SHA-256 over every file below (see above)
  std::vector<SkillFileEntry> files;  // SKILL.md first, then the others by path
};

// A skill that was not loaded, and why (a coded skill.* error whose message names the file).
struct SkillProblem {
  std::string path;  // the SKILL.md or the folder concerned
  SkillSource source = SkillSource::kUser;
  Error error;
};

class SkillCatalog {
 public:
  virtual ~SkillCatalog() = default;
  // The loaded skills, sorted by name, names unique.
  virtual const std::vector<Skill>& skills() const = 0;
  // The skills that were skipped, in the order they were found.
  virtual const std::vector<SkillProblem>& problems() const = 0;
  // The skill named `name`, or nullptr.
  const Skill* find(std::string_view name) const {
    for (const Skill& skill : skills()) {
      if (skill.name == name) return &skill;
    }
    return nullptr;
  }
  // The text of file `relative_path` of skill `name` ("" or "SKILL.md": the instructions below its front
  // matter). Errors: skill.not_found, skill.path_outside (absolute, "..", or through a symlink),
  // skill.file_not_found (not one of the skill's files), skill.binary_file, skill.changed (the file on disk
  // no longer matches the loaded digest, or is gone).
  virtual Result<std::string> read(std::string_view name, std::string_view relative_path) const = 0;
};

}  // namespace keel
