#include "transport/ui_sessions.h"

#include <algorithm>
#include <cerrno>
#include <vector>

#include "util/random_hex.h"

namespace keel {

bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

UiSessions::UiSessions(std::string one_time_token)
    : one_time_token_(one_time_token.empty() ? random_hex(32) : std::move(one_time_token)) {}

bool UiSessions::take_one_time_token(std::string_view token) {
  const bool matches = same_secret(token, one_time_token_);
  MutexLock guard(mu_);
  if (!matches || one_time_used_) return false;
  one_time_used_ = true;
  return true;
}

std::string UiSessions::open() {
  std::string cookie = random_hex(32);
  MutexLock guard(mu_);
  if (sessions_.size() >= kMaxUiSessions) sessions_.pop_front();
  sessions_.push_back(cookie);
  return cookie;
}

bool UiSessions::valid(std::string_view cookie) const {
  MutexLock guard(mu_);
  bool found = false;
  // Every session is compared, so the time taken does not tell which one was close.
  for (const std::string& session : sessions_) found = same_secret(cookie, session) || found;
  return found;
}

size_t UiSessions::size() const {
  MutexLock guard(mu_);
  return sessions_.size();
}

}  // namespace keel
