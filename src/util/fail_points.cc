// util/fail_points.cc — named fail points (see fail_points.h).
//
// Whether points can trigger is decided when this file is compiled (KEEL_FAILPOINTS_ENABLED), so a
// production build cannot be made to fail or die through the environment. Arming and spec parsing work
// in every build, so a malformed spec is reported the same way everywhere.
#include "util/fail_points.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <system_error>

#include "keel/error_codes.h"

namespace keel {
namespace {

struct SpecEntry {
  std::string name;
  FailPoints::Action action;
  uint64_t nth;
  bool repeat;
  std::string release_fifo;
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Parses one trimmed, non-empty `name=action[@nth][*]` entry; whitespace is allowed around each token.
Result<SpecEntry> parse_entry(std::string_view entry) {
  auto malformed = [entry](std::string_view why) {
    return fail(codes::kInvalidArgument,
                "malformed KEEL_FAILPOINTS entry '" + std::string(entry) + "': " + std::string(why));
  };
  const size_t eq = entry.find('=');
  if (eq == std::string_view::npos) return malformed("expected name=action");
  SpecEntry out{std::string(trim(entry.substr(0, eq))), FailPoints::Action::kError, 1, false, {}};
  if (out.name.empty()) return malformed("empty fail point name");
  for (const char c : out.name) {
    if (is_space(c) || c == '@' || c == '*') {
      return malformed("fail point name contains '" + std::string(1, c) + "'");
    }
  }

  std::string_view rest = trim(entry.substr(eq + 1));
  size_t word_len = 0;
  while (word_len < rest.size() && rest[word_len] >= 'a' && rest[word_len] <= 'z') ++word_len;
  const std::string_view action = rest.substr(0, word_len);
  if (rest.empty()) return malformed("missing action (expected error, crash or hold)");
  if (action == "error") {
    out.action = FailPoints::Action::kError;
  } else if (action == "crash") {
    out.action = FailPoints::Action::kCrash;
  } else if (action == "hold") {
    out.action = FailPoints::Action::kHold;
  } else {
    return malformed("unknown action '" + std::string(rest.substr(0, rest.find_first_of("@*:"))) +
                     "' (expected error, crash or hold)");
  }
  rest = trim(rest.substr(word_len));
  // A hold's FIFO is everything after the ':' (a path may hold '@' and '*'); the rest is parsed before it.
  if (out.action == FailPoints::Action::kHold) {
    const size_t colon = rest.find(':');
    if (colon == std::string_view::npos) return malformed("hold needs its release FIFO: hold:/path/to/fifo");
    out.release_fifo = std::string(trim(rest.substr(colon + 1)));
    if (out.release_fifo.empty()) return malformed("empty release FIFO path after 'hold:'");
    rest = trim(rest.substr(0, colon));
  }

  if (!rest.empty() && rest.front() == '@') {
    rest = trim(rest.substr(1));
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out.nth);
    if (ec == std::errc::result_out_of_range) return malformed("hit number out of range");
    if (ec != std::errc() || end == rest.data()) return malformed("expected a hit number after '@'");
    if (out.nth == 0) return malformed("hit numbers start at 1");
    rest = trim(rest.substr(static_cast<size_t>(end - rest.data())));
  }
  if (!rest.empty() && rest.front() == '*') {
    out.repeat = true;
    rest = trim(rest.substr(1));
  }
  if (!rest.empty()) return malformed("unexpected '" + std::string(rest) + "'");
  return out;
}

// Blocks until a writer writes to the FIFO at `path` or closes it (see FailPoints::Action::kHold).
Result<void> wait_for_release(std::string_view name, const std::string& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // a FIFO's open waits for its writer
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    return fail(codes::kFailPoint, "fail point '" + std::string(name) + "' cannot hold: opening its FIFO " +
                                       path + " failed: " + std::strerror(errno));
  }
  char byte = 0;
  ssize_t got = 0;
  do {
    got = ::read(fd, &byte, 1);  // a byte, or 0 when the writer closed without writing: either releases
  } while (got < 0 && errno == EINTR);
  ::close(fd);
  return {};
}

}  // namespace

void FailPoints::arm(std::string_view name, Action action, uint64_t nth, bool repeat,
                     std::string release_fifo) {
  MutexLock lock(mu_);
  const auto seen = hits_.find(name);
  const uint64_t hits_so_far = seen == hits_.end() ? 0 : seen->second;
  // nth = 0 would mean "already triggered"; treat it as the next hit, the earliest meaningful one.
  const uint64_t trigger_at = hits_so_far + (nth == 0 ? 1 : nth);
  armed_.insert_or_assign(std::string(name), Armed{action, trigger_at, repeat, std::move(release_fifo)});
}

void FailPoints::disarm(std::string_view name) {
  MutexLock lock(mu_);
  if (const auto it = armed_.find(name); it != armed_.end()) armed_.erase(it);
}

void FailPoints::disarm_all() {
  MutexLock lock(mu_);
  armed_.clear();
}

Result<void> FailPoints::arm_from_spec(std::string_view spec) {
  // Parse everything before arming anything: a malformed spec leaves the points as they were.
  std::vector<SpecEntry> entries;
  while (true) {
    const size_t semicolon = spec.find(';');
    const std::string_view entry = trim(spec.substr(0, semicolon));
    if (!entry.empty()) entries.push_back(KEEL_TRY(parse_entry(entry)));
    if (semicolon == std::string_view::npos) break;
    spec.remove_prefix(semicolon + 1);
  }
  for (SpecEntry& e : entries) arm(e.name, e.action, e.nth, e.repeat, std::move(e.release_fifo));
  return {};
}

Result<void> FailPoints::arm_from_env() {
#ifdef KEEL_FAILPOINTS_ENABLED
  const char* spec = std::getenv("KEEL_FAILPOINTS");
  if (spec == nullptr) return {};
  if (auto armed = arm_from_spec(spec); !armed) return fail(armed.error().with_context("KEEL_FAILPOINTS"));
#endif
  return {};
}

Result<void> FailPoints::hit(std::string_view name) {
#ifndef KEEL_FAILPOINTS_ENABLED
  (void)name;
  return {};
#else
  Action action = Action::kError;
  std::string release_fifo;
  {
    MutexLock lock(mu_);
    auto seen = hits_.find(name);
    if (seen == hits_.end()) seen = hits_.emplace(std::string(name), 0).first;
    const uint64_t count = ++seen->second;
    const auto armed = armed_.find(name);
    if (armed == armed_.end() || count < armed->second.trigger_at) return {};
    action = armed->second.action;
    release_fifo = armed->second.release_fifo;
    if (!armed->second.repeat) armed_.erase(armed);
  }
  // Outside the lock: other points, and this one's hit counter, stay usable while a hold waits.
  if (action == Action::kHold) return wait_for_release(name, release_fifo);
  if (action == Action::kCrash) {
    // SIGKILL cannot be caught or blocked: no destructors, atexit handlers or stdio flushing run, which
    // is the point. _Exit is only reached if the signal somehow did not end us.
    ::kill(::getpid(), SIGKILL);
    std::_Exit(137);
  }
  return fail(codes::kFailPoint, "fail point '" + std::string(name) + "' triggered");
#endif
}

bool FailPoints::holds_next(std::string_view name) const {
#ifndef KEEL_FAILPOINTS_ENABLED
  (void)name;
  return false;
#else
  MutexLock lock(mu_);
  const auto armed = armed_.find(name);
  if (armed == armed_.end() || armed->second.action != Action::kHold) return false;
  const auto seen = hits_.find(name);
  const uint64_t next = (seen == hits_.end() ? 0 : seen->second) + 1;
  return next >= armed->second.trigger_at;
#endif
}

uint64_t FailPoints::hits(std::string_view name) const {
  MutexLock lock(mu_);
  const auto it = hits_.find(name);
  return it == hits_.end() ? 0 : it->second;
}

std::vector<std::string> FailPoints::names_seen() const {
  MutexLock lock(mu_);
  std::vector<std::string> names;
  names.reserve(hits_.size());
  for (const auto& [name, count] : hits_) names.push_back(name);
  return names;
}

}  // namespace keel
