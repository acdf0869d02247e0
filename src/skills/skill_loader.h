// skills/skill_loader.h — loading skill folders from disk, bounded, into keel::Skill values.
//
// A skill folder holds SKILL.md (skills/front_matter.h) and optional files beside it, in subfolders down to
// max_depth. What is part of a skill: regular files whose names are UTF-8 and do not start with '.'; symlinks
// (to files or folders) are never followed inside a skill, so a skill cannot expose what lies outside its
// folder. The skill's name must equal its folder's name: the folder is how a person finds a skill on disk,
// and within one directory folder names are unique, so two skills of one directory never claim one name.
//
// Every file is read once, bounded (SkillLimits), and hashed; the digest covers each file's relative path
// and SHA-256, SKILL.md included. Loading never throws on what the disk holds: every failure is a coded
// skill.* error whose message names the file or folder.
#pragma once

#include <cstddef>
#include <filesystem>
#include <vector>

#include "keel/error.h"
#include "keel/skills.h"
#include "skills/front_matter.h"

namespace keel::skills {

struct SkillLimits {
  FrontMatterLimits front_matter;
  size_t max_skill_md_bytes = 256 * 1024;
  size_t max_file_bytes = 256 * 1024;        // any other file of a skill (and what read_skill returns)
  size_t max_files = 64;                     // SKILL.md included
  size_t max_skill_bytes = 4 * 1024 * 1024;  // all of a skill's files together
  size_t max_depth = 4;                      // subfolder levels below the skill's folder
  size_t max_skills = 128;                   // skills of one catalog (both directories together)
};

// The skill in folder `dir`. Errors: skill.missing_skill_md, skill.bad_front_matter (not UTF-8 text, or as
// parse_skill_document), skill.missing_field, skill.bad_name (not a valid name, or not the folder's name),
// skill.too_large (a file, the number of files or their total over its bound), skill.io_error.
Result<Skill> load_skill(const std::filesystem::path& dir, SkillSource source,
                         const SkillLimits& limits = {});

struct SkillScan {
  std::vector<Skill> skills;  // in folder-name order
  std::vector<SkillProblem> problems;
};

// Every skill folder directly inside `root` (folders whose names start with '.' are skipped; a symlink to a
// folder counts, as the person placed it there). A `root` that does not exist holds no skills and is no
// problem. At most limits.max_skills skills are loaded; later folders are reported once (skill.too_many).
SkillScan scan_skill_directory(const std::filesystem::path& root, SkillSource source,
                               const SkillLimits& limits = {});

// The skill's digest over its files (path and SHA-256 of each, in order).
std::string skill_digest(const std::vector<SkillFileEntry>& files);

// Whether `bytes` can be handed to the model as text: valid UTF-8 without NUL bytes.
bool is_text(std::string_view bytes);

// Reads at most `max_bytes` + 1 bytes of the regular file `path` without following a symlink in its last
// component. Errors: skill.io_error (cannot be opened or read; a symlink or not a regular file).
Result<std::string> read_bounded(const std::filesystem::path& path, size_t max_bytes);

}  // namespace keel::skills
