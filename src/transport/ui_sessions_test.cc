// The web interface's sessions: the one-time token opens one session only, cookies are random and capped.
#include "transport/ui_sessions.h"

#include <gtest/gtest.h>

#include <set>

namespace keel {
namespace {

TEST(UiSessionsTest, TheOneTimeTokenWorksOnceAndOnlyItself) {
  UiSessions sessions("one-time-0123456789");
  EXPECT_FALSE(sessions.take_one_time_token("one-time-012345678"));
  EXPECT_FALSE(sessions.take_one_time_token(""));
  EXPECT_TRUE(sessions.take_one_time_token("one-time-0123456789"));
  EXPECT_FALSE(sessions.take_one_time_token("one-time-0123456789"));
}

TEST(UiSessionsTest, ANewServerHasARandomOneTimeToken) {
  UiSessions a;
  UiSessions b;
  EXPECT_EQ(a.one_time_token().size(), 64u);
  EXPECT_NE(a.one_time_token(), b.one_time_token());
}

TEST(UiSessionsTest, CookiesAreRandom256BitValuesAndTheOldestGoesPastTheCap) {
  UiSessions sessions;
  const std::string first = sessions.open();
  EXPECT_EQ(first.size(), 64u);
  EXPECT_TRUE(sessions.valid(first));
  EXPECT_FALSE(sessions.valid(first.substr(1)));
  EXPECT_FALSE(sessions.valid(""));
  std::set<std::string> seen = {first};
  for (size_t i = 1; i < kMaxUiSessions; ++i) seen.insert(sessions.open());
  EXPECT_EQ(seen.size(), kMaxUiSessions);
  EXPECT_TRUE(sessions.valid(first));
  const std::string newest = sessions.open();
  EXPECT_EQ(sessions.size(), kMaxUiSessions);
  EXPECT_FALSE(sessions.valid(first));
  EXPECT_TRUE(sessions.valid(newest));
}

}  // namespace
}  // namespace keel
