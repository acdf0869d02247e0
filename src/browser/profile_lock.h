// browser/profile_lock.h — whether keel may start Chromium in a persistent profile that another Chromium may
// still hold.
//
// Chromium marks a profile in use with the symlink <profile>/SingletonLock -> "<hostname>-<pid>" and refuses
// (or hands its arguments to the holder and exits) when that process lives. Before launching into a
// persistent profile, claim_profile() looks at the lock:
//   - no lock, or one whose process is gone: go on (Chromium replaces a stale lock of this host itself);
//   - a live process on this host that is a Chromium started with --user-data-dir=<this profile>: a browser
//     that an earlier keel left behind (it died without closing it). Its process group is killed (the
//     process alone when it does not lead a group), and keel goes on once it is gone;
//   - anything else (another host's lock, a live process that is not a Chromium of this profile — a person's
//     own browser): browser.launch_failed saying the profile is in use; nothing is killed.
//
// Any thread; blocks for at most `wait` (only while a leftover dies).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "keel/error.h"

namespace keel::browser {

struct SingletonLockOwner {
  std::string host;
  pid_t pid = 0;

  friend bool operator==(const SingletonLockOwner&, const SingletonLockOwner&) = default;
};

// "<hostname>-<pid>" (the hostname may contain '-'); nullopt for anything else.
std::optional<SingletonLockOwner> parse_singleton_lock(std::string_view target);

// Whether a process's command line (/proc/<pid>/cmdline: NUL-separated arguments) is a Chromium's (its
// program's name contains "chrom") with this profile as its user data directory.
bool chromium_of_profile(std::string_view cmdline, const std::filesystem::path& profile);

// See the header comment.
Result<void> claim_profile(const std::filesystem::path& profile, std::chrono::milliseconds wait);

}  // namespace keel::browser
