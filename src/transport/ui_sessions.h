// transport/ui_sessions.h — who may use the web interface keel serves (docs/web.md, docs/security.md "The web
// interface's session").
//
// Jupyter-style: keel prints a URL whose fragment holds a one-time token; the page sends it once in
// `POST /session` and gets a session cookie (256 random bits, hex) in exchange. The one-time token opens one
// session only: a second use is refused. Sessions live as long as the process; at most kMaxUiSessions at
// once, the oldest forgotten first (a person opens few; the cap keeps a client holding the server token from
// growing the set without bound).
//
// Thread-safe: the server's connections call it from their strands. Tokens and cookies are compared in
// constant time.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>

#include "util/thread_annotations.h"

namespace keel {

inline constexpr size_t kMaxUiSessions = 64;

// Compares without leaking through timing how much of `a` matched `b`.
bool same_secret(std::string_view a, std::string_view b);

class UiSessions {
 public:
  // `one_time_token` empty: a new random one (32 bytes, hex).
  explicit UiSessions(std::string one_time_token = {});

  const std::string& one_time_token() const { return one_time_token_; }
  // True once: for the first presentation of the one-time token.
  bool take_one_time_token(std::string_view token);
  // A new session; its cookie value.
  std::string open();
  bool valid(std::string_view cookie) const;
  size_t size() const;

 private:
  const std::string one_time_token_;
  mutable Mutex mu_;
  bool one_time_used_ GUARDED_BY(mu_) = false;
  std::deque<std::string> sessions_ GUARDED_BY(mu_);
};

}  // namespace keel
