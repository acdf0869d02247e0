// browser/browser_state_file.h — what the browser layer remembers across a keel restart (issue 17 plan §1.8
// "Restart recovery"): which tabs each agent thread had open, at which URL, which one was current, and the
// ref counters of the thread (RefTable::high_water), and the highest tab id ever given, so that after a
// restart keel can reopen the tabs under their ids, never give an old id to another page, and recognize a
// ref from before it as such.
//
// The file is <data_dir>/browser/state.json:
//   {"version": 2, "profile": "<profile dir or \"\">", "tabHighWater": n,
//    "threads": {"<thread id>": {"tabs": [{"tab": 1, "url": "...", "title": "...", "current": true}],
//                                "refHighWater": {"frames": n, "indices": {"0": n}}}}}
// Version 1 (no "tabHighWater") is still read: its high-water mark is its highest tab id.
// Guarantees:
//   - written through util/private_file (mode 0600 in a 0700 folder, a fresh temporary renamed over the
//     target), so a reader sees the old file or the whole new one, never a mix;
//   - decoding is strict and total: anything that is not exactly what encode_browser_state writes (not JSON,
//     too deep, too big, an unknown or missing field, a wrong type, a tab id twice, two current tabs, a tab
//     id above tabHighWater, another version than 1 or 2, unreadable ref counters) is
//     browser.state_file_damaged naming the first problem — never an exception. A damaged file is meant to be
//     reported and ignored: keel starts without it and the next save replaces it;
//   - a file that is a symlink, another user's, or open to group or others is not read
//     (browser.state_file_unsafe); I/O failures are browser.state_file_io.
// Strings are written as valid UTF-8 (invalid bytes in a page title become U+FFFD).
//
// Functions only; any thread (callers serialize their own saves, e.g. debounced on the browser's thread).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "keel/error.h"

namespace keel::browser {

inline constexpr int kBrowserStateVersion = 2;
// A larger file is damaged: even thousands of tabs take far less.
inline constexpr size_t kMaxBrowserStateBytes = 16u << 20;

struct SavedTab {
  int64_t tab_id = 0;  // > 0, unique within its thread
  std::string url;
  std::string title;
  bool current = false;  // at most one per thread

  friend bool operator==(const SavedTab&, const SavedTab&) = default;
};

struct SavedThread {
  std::vector<SavedTab> tabs;
  // RefTable::high_water() of the thread; checked by RefTable::restore_high_water's rules when decoded.
  nlohmann::json ref_high_water = nlohmann::json{{"frames", 0}, {"indices", nlohmann::json::object()}};

  friend bool operator==(const SavedThread&, const SavedThread&) = default;
};

struct BrowserState {
  std::string profile;  // the persistent profile directory the tabs were open in; "" for a temporary one
  // The highest tab id the browser ever gave (closed tabs' included); encoded as at least every saved tab id.
  int64_t tab_high_water = 0;
  std::map<std::string, SavedThread> threads;  // by agent thread id (not empty)

  friend bool operator==(const BrowserState&, const BrowserState&) = default;
};

// <data_dir>/browser/state.json
std::filesystem::path browser_state_path(const std::filesystem::path& data_dir);

std::string encode_browser_state(const BrowserState& state);
// browser.state_file_damaged (header comment).
Result<BrowserState> decode_browser_state(std::string_view text);

// Writes `state` to browser_state_path(data_dir), creating <data_dir>/browser (0700) when missing.
// Errors: browser.state_file_io, browser.state_file_unsafe.
Result<void> save_browser_state(const std::filesystem::path& data_dir, const BrowserState& state);

// The saved state; nullopt when there is no file (a first start). Errors: browser.state_file_io,
// browser.state_file_unsafe, browser.state_file_damaged — each to be reported, then ignored.
Result<std::optional<BrowserState>> load_browser_state(const std::filesystem::path& data_dir);

// The same two for a state file named by its own path (RuntimeOptions::state_file); the folder holding it is
// created (0700) when missing.
Result<void> save_browser_state_file(const std::filesystem::path& file, const BrowserState& state);
Result<std::optional<BrowserState>> load_browser_state_file(const std::filesystem::path& file);

}  // namespace keel::browser
