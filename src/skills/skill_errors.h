// skills/skill_errors.h — the stable error codes of skills (docs/skills.md): a SKILL.md that cannot be
// loaded, and the refusals of read_skill.
//
// Pending a merge into keel/error_codes.h (which lists every code keel emits); until then they live here.
// The same rules apply: never rename or reuse a code, add new ones.
#pragma once

namespace keel::codes {

// loading a skill (each message names the file)
inline constexpr char kSkillBadFrontMatter[] = "skill.bad_front_matter";
inline constexpr char kSkillMissingField[] = "skill.missing_field";
inline constexpr char kSkillBadName[] = "skill.bad_name";
inline constexpr char kSkillTooLarge[] = "skill.too_large";
inline constexpr char kSkillTooMany[] = "skill.too_many";
inline constexpr char kSkillIo[] = "skill.io_error";
inline constexpr char kSkillMissingSkillMd[] = "skill.missing_skill_md";

// reading a skill (read_skill)
inline constexpr char kSkillNotFound[] = "skill.not_found";
inline constexpr char kSkillFileNotFound[] = "skill.file_not_found";
inline constexpr char kSkillPathOutside[] = "skill.path_outside";
inline constexpr char kSkillBinaryFile[] = "skill.binary_file";
inline constexpr char kSkillChanged[] = "skill.changed";

}  // namespace keel::codes
