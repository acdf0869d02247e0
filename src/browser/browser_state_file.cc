#include "browser/browser_state_file.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <set>
#include <system_error>

#include "browser/browser_errors.h"
#include "browser/ref_table.h"
#include "util/canonical_json.h"
#include "util/private_file.h"
#include "util/utf8.h"

namespace keel::browser {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr PrivateFileCodes kStateFileCodes{.io = codes::kBrowserStateFileIo,
                                           .unsafe = codes::kBrowserStateFileUnsafe,
                                           .permissions = codes::kBrowserStateFileUnsafe};

constexpr std::string_view kWhat = "the browser state file";

std::unexpected<Error> damaged(const std::string& problem) {
  return fail(codes::kBrowserStateFileDamaged,
              "the browser state file is damaged (" + problem +
                  "); keel ignores it: tabs of earlier runs are not reopened");
}

// Checks that `object` is an object with exactly the fields `names` (all required, no others).
Result<void> exact_fields(const json& object, std::initializer_list<std::string_view> names,
                          const std::string& where) {
  if (!object.is_object()) return damaged(where + " is not an object");
  for (std::string_view name : names) {
    if (!object.contains(name)) return damaged(where + " has no \"" + std::string(name) + "\"");
  }
  if (object.size() != names.size()) {
    for (const auto& [key, value] : object.items()) {
      if (std::find(names.begin(), names.end(), key) == names.end()) {
        return damaged(where + " has an unknown field \"" + utf8_sanitized(key.substr(0, 40)) + "\"");
      }
    }
  }
  return {};
}

// Whether `value` is an integer of int64_t's range that is at least `least`.
bool integer_from(const json& value, int64_t least) {
  return value.is_number_integer() &&
         !(value.is_number_unsigned() &&
           value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) &&
         value.get<int64_t>() >= least;
}

Result<SavedTab> decode_tab(const json& value, const std::string& where) {
  KEEL_TRY(exact_fields(value, {"tab", "url", "title", "current"}, where));
  const json& tab = value["tab"];
  if (!integer_from(tab, 1)) return damaged(where + ".tab is not a positive integer");
  if (!value["url"].is_string() || value["url"].get_ref<const std::string&>().empty()) {
    return damaged(where + ".url is not a non-empty string");
  }
  if (!value["title"].is_string()) return damaged(where + ".title is not a string");
  if (!value["current"].is_boolean()) return damaged(where + ".current is not true or false");
  SavedTab saved;
  saved.tab_id = tab.get<int64_t>();
  saved.url = value["url"].get<std::string>();
  saved.title = value["title"].get<std::string>();
  saved.current = value["current"].get<bool>();
  return saved;
}

Result<SavedThread> decode_thread(const json& value, const std::string& where) {
  KEEL_TRY(exact_fields(value, {"tabs", "refHighWater"}, where));
  if (!value["tabs"].is_array()) return damaged(where + ".tabs is not an array");
  SavedThread thread;
  std::set<int64_t> ids;
  bool current_seen = false;
  for (size_t i = 0; i < value["tabs"].size(); ++i) {
    const std::string tab_where = where + ".tabs[" + std::to_string(i) + "]";
    SavedTab tab = KEEL_TRY(decode_tab(value["tabs"][i], tab_where));
    if (!ids.insert(tab.tab_id).second) {
      return damaged(tab_where + " repeats tab " + std::to_string(tab.tab_id));
    }
    if (tab.current && current_seen) return damaged(tab_where + " is a second current tab");
    current_seen = current_seen || tab.current;
    thread.tabs.push_back(std::move(tab));
  }
  // The counters must be ones RefTable accepts; a scratch table applies its own rules.
  RefTable scratch(1);
  Result<void> marks = scratch.restore_high_water(value["refHighWater"]);
  if (!marks) return damaged(where + ".refHighWater: " + marks.error().message());
  thread.ref_high_water = value["refHighWater"];
  return thread;
}

int64_t highest_tab_id(const BrowserState& state) {
  int64_t highest = 0;
  for (const auto& [id, thread] : state.threads) {
    for (const SavedTab& tab : thread.tabs) highest = std::max(highest, tab.tab_id);
  }
  return highest;
}

std::string os_error(int error) { return std::error_code(error, std::generic_category()).message(); }

}  // namespace

fs::path browser_state_path(const fs::path& data_dir) { return data_dir / "browser" / "state.json"; }

std::string encode_browser_state(const BrowserState& state) {
  json threads = json::object();
  for (const auto& [id, thread] : state.threads) {
    json tabs = json::array();
    for (const SavedTab& tab : thread.tabs) {
      tabs.push_back({{"tab", tab.tab_id},
                      {"url", utf8_sanitized(tab.url)},
                      {"title", utf8_sanitized(tab.title)},
                      {"current", tab.current}});
    }
    threads[utf8_sanitized(id)] = {{"tabs", std::move(tabs)}, {"refHighWater", thread.ref_high_water}};
  }
  const json root = {{"version", kBrowserStateVersion},
                     {"profile", utf8_sanitized(state.profile)},
                     {"tabHighWater", std::max(state.tab_high_water, highest_tab_id(state))},
                     {"threads", threads}};
  // `replace` keeps dump() from throwing should a ref counter object hold invalid UTF-8 (it never should).
  return root.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<BrowserState> decode_browser_state(std::string_view text) {
  if (text.size() > kMaxBrowserStateBytes) {
    return damaged("larger than " + std::to_string(kMaxBrowserStateBytes) + " bytes");
  }
  // parse_json refuses invalid UTF-8, repeated keys and nesting deeper than kMaxJsonDepth, and never throws.
  Result<json> parsed = parse_json(text);
  if (!parsed) return damaged("not JSON: " + parsed.error().message());
  const json& root = *parsed;
  if (!root.is_object()) return damaged("the file is not an object");
  if (!root.contains("version")) return damaged("the file has no \"version\"");
  if (!root["version"].is_number_integer()) return damaged("\"version\" is not an integer");
  // Version 1 had no tabHighWater: its highest tab id stands in for it.
  const bool version_1 = root["version"] == 1;
  if (!version_1 && root["version"] != kBrowserStateVersion) {
    return damaged("version " + root["version"].dump() + "; this keel reads versions 1 to " +
                   std::to_string(kBrowserStateVersion));
  }
  if (version_1) {
    KEEL_TRY(exact_fields(root, {"version", "profile", "threads"}, "the file"));
  } else {
    KEEL_TRY(exact_fields(root, {"version", "profile", "tabHighWater", "threads"}, "the file"));
    if (!integer_from(root["tabHighWater"], 0)) return damaged("\"tabHighWater\" is not a natural number");
  }
  if (!root["profile"].is_string()) return damaged("\"profile\" is not a string");
  if (!root["threads"].is_object()) return damaged("\"threads\" is not an object");
  BrowserState state;
  state.profile = root["profile"].get<std::string>();
  for (const auto& [id, value] : root["threads"].items()) {
    if (id.empty()) return damaged("a thread has an empty id");
    const std::string where = "thread \"" + id.substr(0, utf8_prefix_length(id, 60)) + "\"";
    state.threads[id] = KEEL_TRY(decode_thread(value, where));
  }
  const int64_t highest = highest_tab_id(state);
  state.tab_high_water = version_1 ? highest : root["tabHighWater"].get<int64_t>();
  if (state.tab_high_water < highest) {
    return damaged("\"tabHighWater\" " + std::to_string(state.tab_high_water) + " is below tab " +
                   std::to_string(highest));
  }
  return state;
}

Result<void> save_browser_state(const fs::path& data_dir, const BrowserState& state) {
  return save_browser_state_file(browser_state_path(data_dir), state);
}

Result<std::optional<BrowserState>> load_browser_state(const fs::path& data_dir) {
  return load_browser_state_file(browser_state_path(data_dir));
}

Result<void> save_browser_state_file(const fs::path& path, const BrowserState& state) {
  KEEL_TRY(create_private_directories(path.parent_path(), codes::kBrowserStateFileIo));
  return write_private_file(path, encode_browser_state(state), kWhat, kStateFileCodes);
}

Result<std::optional<BrowserState>> load_browser_state_file(const fs::path& path) {
  bool missing = false;
  Result<UniqueFd> fd = open_private_file(path, kWhat, kStateFileCodes, missing);
  if (!fd) {
    if (missing) return std::optional<BrowserState>();
    return fail(fd.error());
  }
  std::string text;
  char buffer[65536];
  while (text.size() <= kMaxBrowserStateBytes) {
    const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return fail(codes::kBrowserStateFileIo, "cannot read " + path.string() + ": " + os_error(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  BrowserState state = KEEL_TRY(decode_browser_state(text));
  return std::optional<BrowserState>(std::move(state));
}

}  // namespace keel::browser
