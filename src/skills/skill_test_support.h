// skills/skill_test_support.h — writing skill folders for the skills tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace keel::skills::testing {

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string skill_md(const std::string& name, const std::string& description,
                            const std::string& body = "Do the thing.\n") {
  return "---\nname: " + name + "\ndescription: " + description + "\n---\n" + body;
}

// <root>/<name>/SKILL.md with that name and description; returns the skill's folder.
inline std::filesystem::path write_skill(const std::filesystem::path& root, const std::string& name,
                                         const std::string& description,
                                         const std::string& body = "Do the thing.\n") {
  write_file(root / name / "SKILL.md", skill_md(name, description, body));
  return root / name;
}

}  // namespace keel::skills::testing
