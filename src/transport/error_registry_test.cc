// Every error code keel can send is registered, documented and in the protocol schema (issue 14, point 21).
//
// The test reads the source tree as it is when it runs (so codes added on other branches are checked after a
// merge, with no list kept here):
//   - the registry: every `inline constexpr char kName[] = "code";` inside a `keel::codes` namespace of a
//     header under include/ or src/ (keel/error_codes.h and the layers' *_errors.h headers that are pending
//     their merge into it);
//   - the uses: every error code passed in a non-test source file under src/ — a string literal
//     (`fail("a.b", ...)`, `Error("a.b", ...)`, `{"code", "a.b"}`) or a constant of any namespace
//     (`fail(kNoModel, ...)`), resolved to its value;
//   - the documentation: the table of docs/protocol.md's "## Error codes" section;
//   - the schema: definitions.errorCode.enum of docs/protocol/keel-protocol-v1.schema.json.
// A failure names the code and the file that holds it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace keel {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = KEEL_SOURCE_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool looks_like_code(const std::string& text) {
  if (text.empty() || text.front() == '.' || text.back() == '.') return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (c == '.' && text[i - 1] != '.');
    if (!ok) return false;
  }
  return true;
}

std::string source_relative(const fs::path& path) { return fs::relative(path, kSourceDir).string(); }

// Source and header files under `dir`, in a stable order.
std::vector<fs::path> sources(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".h" || ext == ".cc")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool is_test_file(const fs::path& path) {
  const std::string name = path.filename().string();
  const std::string text = path.generic_string();
  return name.find("test") != std::string::npos || name.find("harness") != std::string::npos ||
         name.find("fixture") != std::string::npos || text.find("/testing/") != std::string::npos;
}

// The string literal starting at `quote` (an opening '"'); empty when there is none.
std::string literal_at(const std::string& text, size_t quote) {
  if (quote >= text.size() || text[quote] != '"') return "";
  const size_t end = text.find('"', quote + 1);
  return end == std::string::npos ? "" : text.substr(quote + 1, end - quote - 1);
}

size_t skip_space(const std::string& text, size_t at) {
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
  return at;
}

// code -> the file that defines it, from the `keel::codes` namespaces of `text`.
void collect_constants(const fs::path& path, std::map<std::string, std::string>& registry) {
  const std::string text = read_file(path);
  for (const std::string opening : {"namespace keel::codes {", "namespace codes {"}) {
    for (size_t start = text.find(opening); start != std::string::npos;
         start = text.find(opening, start + 1)) {
      const size_t end = text.find("\n}", start);
      const std::string body = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
      const std::string marker = "inline constexpr char k";
      for (size_t at = body.find(marker); at != std::string::npos; at = body.find(marker, at + 1)) {
        const size_t equals = body.find('=', at);
        if (equals == std::string::npos) break;
        const std::string code = literal_at(body, skip_space(body, equals + 1));
        if (looks_like_code(code)) registry.emplace(code, source_relative(path));
      }
    }
  }
}

// Every `[inline] constexpr char kName[] = "value";` in a non-test file under src/, whatever its namespace
// (a constant local to one .cc file counts too): name -> values (two namespaces may use one name).
std::map<std::string, std::set<std::string>> all_char_constants() {
  std::map<std::string, std::set<std::string>> constants;
  const std::string marker = "constexpr char ";
  for (const fs::path& path : sources(kSourceDir / "src")) {
    if (is_test_file(path)) continue;
    const std::string text = read_file(path);
    for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
      const size_t name_start = at + marker.size();
      const size_t bracket = text.find('[', name_start);
      const size_t equals = text.find('=', name_start);
      if (bracket == std::string::npos || equals == std::string::npos || bracket > equals) continue;
      const std::string value = literal_at(text, skip_space(text, equals + 1));
      if (!value.empty()) constants[text.substr(name_start, bracket - name_start)].insert(value);
    }
  }
  return constants;
}

// The identifier starting at `at` (letters, digits, '_' and '::'), without a leading `codes::`.
std::string identifier_at(const std::string& text, size_t at) {
  size_t end = at;
  while (end < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == ':')) {
    ++end;
  }
  std::string name = text.substr(at, end - at);
  if (const size_t colons = name.rfind("::"); colons != std::string::npos) name = name.substr(colons + 2);
  return name;
}

// code -> the first non-test file under src/ that passes it as an error code: a string literal, or a
// constant of any namespace (`fail(kNoModel, ...)`), resolved to its value.
std::map<std::string, std::string> literal_uses() {
  std::map<std::string, std::string> uses;
  const auto constants = all_char_constants();
  for (const fs::path& path : sources(kSourceDir / "src")) {
    if (is_test_file(path)) continue;
    const std::string text = read_file(path);
    for (const std::string call : {"fail(", "Error("}) {
      for (size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + 1)) {
        if (at > 0 && (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_'))
          continue;
        const std::string name = identifier_at(text, skip_space(text, at + call.size()));
        if (name.size() < 2 || name[0] != 'k') continue;
        auto found = constants.find(name);
        if (found == constants.end()) continue;
        for (const std::string& code : found->second) {
          if (looks_like_code(code)) uses.emplace(code, source_relative(path));
        }
      }
    }
    for (const std::string call : {"fail(", "Error(", "Error{", "{\"code\","}) {
      for (size_t at = text.find(call); at != std::string::npos; at = text.find(call, at + 1)) {
        // A whole identifier: not the tail of another name (e.g. `on_fail(`).
        if (std::isalnum(static_cast<unsigned char>(call[0])) && at > 0 &&
            (std::isalnum(static_cast<unsigned char>(text[at - 1])) || text[at - 1] == '_')) {
          continue;
        }
        const std::string code = literal_at(text, skip_space(text, at + call.size()));
        if (looks_like_code(code)) uses.emplace(code, source_relative(path));
      }
    }
  }
  return uses;
}

std::map<std::string, std::string> registry() {
  std::map<std::string, std::string> codes;
  for (const fs::path& dir : {kSourceDir / "include", kSourceDir / "src"}) {
    for (const fs::path& path : sources(dir)) {
      if (path.extension() == ".h" && !is_test_file(path)) collect_constants(path, codes);
    }
  }
  return codes;
}

// The codes in the first column of the table under "## Error codes" in docs/protocol.md.
std::set<std::string> documented() {
  const std::string text = read_file(kSourceDir / "docs" / "protocol.md");
  std::set<std::string> codes;
  const size_t section = text.find("\n## Error codes");
  if (section == std::string::npos) return codes;
  const size_t next = text.find("\n## ", section + 1);
  std::istringstream lines(
      text.substr(section, next == std::string::npos ? std::string::npos : next - section));
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.starts_with("| `")) continue;
    const size_t end = line.find('`', 3);
    if (end != std::string::npos) codes.insert(line.substr(3, end - 3));
  }
  return codes;
}

std::set<std::string> in_schema() {
  const nlohmann::json schema =
      nlohmann::json::parse(read_file(kSourceDir / "docs" / "protocol" / "keel-protocol-v1.schema.json"));
  std::set<std::string> codes;
  for (const auto& code : schema["definitions"]["errorCode"].value("enum", nlohmann::json::array())) {
    codes.insert(code.get<std::string>());
  }
  return codes;
}

TEST(ErrorRegistryTest, TheScanFindsTheCodesItMustFind) {
  // Guards the scanner itself: a constant of keel/error_codes.h, one of a layer header, one written
  // over two lines, and raw literals in the CLI.
  const auto codes = registry();
  EXPECT_TRUE(codes.contains("json.too_deep"));
  EXPECT_TRUE(codes.contains("rpc.invalid_params"));
  EXPECT_TRUE(codes.contains("provider.image_unsupported"));
  EXPECT_GT(codes.size(), 100u);
  const auto uses = literal_uses();
  EXPECT_TRUE(uses.contains("thread.waiting")) << "src/cli/threads_command.cc passes it as a literal";
  EXPECT_TRUE(uses.contains("host.no_model"))
      << "src/cli/engine_host.cc passes kNoModel, a constant of keel::cli";
}

TEST(ErrorRegistryTest, EveryCodeUsedInSourceIsRegisteredDocumentedAndInTheSchema) {
  const auto codes = registry();
  const auto docs = documented();
  const auto schema = in_schema();
  ASSERT_FALSE(docs.empty()) << "docs/protocol.md has no \"## Error codes\" table";
  ASSERT_FALSE(schema.empty()) << "the protocol schema has no definitions.errorCode enum";
  for (const auto& [code, file] : literal_uses()) {
    EXPECT_TRUE(codes.contains(code))
        << "code \"" << code << "\" used as a literal in " << file
        << " is not in the registry: add a constant to include/keel/error_codes.h";
  }
  for (const auto& [code, file] : codes) {
    EXPECT_TRUE(docs.contains(code)) << "code \"" << code << "\" (defined in " << file
                                     << ") is missing from the \"## Error codes\" table of docs/protocol.md";
    EXPECT_TRUE(schema.contains(code))
        << "code \"" << code << "\" (defined in " << file
        << ") is missing from definitions.errorCode in docs/protocol/keel-protocol-v1.schema.json";
  }
  for (const auto& [code, file] : literal_uses()) {
    if (codes.contains(code)) continue;  // reported above when it is not
    EXPECT_TRUE(docs.contains(code)) << "code \"" << code << "\" used in " << file << " is not documented";
  }
}

TEST(ErrorRegistryTest, DocumentedCodesExist) {
  const auto codes = registry();
  for (const std::string& code : documented()) {
    EXPECT_TRUE(codes.contains(code))
        << "docs/protocol.md documents \"" << code << "\", which no header defines";
  }
  for (const std::string& code : in_schema()) {
    EXPECT_TRUE(codes.contains(code))
        << "the schema's errorCode lists \"" << code << "\", which no header defines";
  }
}

}  // namespace
}  // namespace keel
