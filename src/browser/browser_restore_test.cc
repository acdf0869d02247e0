#include "browser/browser_restore.h"

#include <gtest/gtest.h>

#include "browser/ref_table.h"

namespace keel::browser {
namespace {

using nlohmann::json;
using Clock = StateSaveSchedule::Clock;
using std::chrono::milliseconds;

json no_refs() { return json{{"frames", 0}, {"indices", json::object()}}; }

TEST(StateSaveSchedule, TheFirstChangeArmsOneWriteAfterTheDelay) {
  StateSaveSchedule schedule(milliseconds(200));
  const Clock::time_point now = Clock::time_point() + milliseconds(1000);
  EXPECT_EQ(schedule.changed(now), now + milliseconds(200));
  EXPECT_TRUE(schedule.armed());
}

TEST(StateSaveSchedule, ChangesBeforeTheWriteRideAlongWithIt) {
  StateSaveSchedule schedule(milliseconds(200));
  const Clock::time_point now = Clock::time_point() + milliseconds(1000);
  ASSERT_TRUE(schedule.changed(now));
  EXPECT_FALSE(schedule.changed(now + milliseconds(50)));
  EXPECT_FALSE(schedule.changed(now + milliseconds(199)));
}

TEST(StateSaveSchedule, AChangeAfterTheWriteArmsTheNextOne) {
  StateSaveSchedule schedule(milliseconds(200));
  const Clock::time_point now = Clock::time_point() + milliseconds(1000);
  ASSERT_TRUE(schedule.changed(now));
  schedule.fired();
  EXPECT_FALSE(schedule.armed());
  EXPECT_EQ(schedule.changed(now + milliseconds(300)), now + milliseconds(500));
}

TEST(SavedThread, KeepsTabsInOrderWithTheCurrentOneAndBlankForPagesWithoutAUrl) {
  RefTable refs;
  const SavedThread saved =
      saved_thread({{2, "https://shop.example/cart", "Cart"}, {5, "", ""}, {7, "chrome-error://x", "Error"}},
                   5, refs.high_water());
  ASSERT_EQ(saved.tabs.size(), 3u);
  EXPECT_EQ(saved.tabs[0], (SavedTab{2, "https://shop.example/cart", "Cart", false}));
  EXPECT_EQ(saved.tabs[1], (SavedTab{5, "about:blank", "", true}));
  EXPECT_EQ(saved.tabs[2].url, "about:blank");
  // What it writes is what the file's strict decoder accepts.
  BrowserState state;
  state.tab_high_water = 7;
  state.threads["t"] = saved;
  Result<BrowserState> decoded = decode_browser_state(encode_browser_state(state));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(*decoded, state);
}

TEST(SavedThread, AThreadIsWorthSavingWithTabsOrIssuedRefsOnly) {
  EXPECT_FALSE(worth_saving(saved_thread({}, 0, no_refs())));
  EXPECT_TRUE(worth_saving(saved_thread({{1, "https://a.example/", ""}}, 1, no_refs())));
  RefTable refs;
  RefKey key;
  key.tab_id = 1;
  key.frame_id = "F";
  key.loader_id = "L";
  key.js_index = 3;
  ASSERT_TRUE(refs.issue(key, "button", "Go"));
  EXPECT_TRUE(worth_saving(saved_thread({}, 0, refs.high_water())));
}

TEST(ReopenPlan, ReloadsOnlyHttpUrlsAndKeepsTheCurrentTab) {
  SavedThread saved;
  saved.tabs = {{1, "https://a.example/x", "A", false},
                {3, "about:blank", "", false},
                {4, "http://127.0.0.1:9/y", "Y", true}};
  const std::vector<ReopenTab> plan = reopen_plan(saved);
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[0].url, "https://a.example/x");
  EXPECT_EQ(plan[1].url, "");
  EXPECT_EQ(plan[2].old_tab, 4);
  EXPECT_FALSE(plan[0].current);
  EXPECT_TRUE(plan[2].current);
}

TEST(ReopenPlan, WithoutACurrentTabTheLastOneBecomesCurrent) {
  SavedThread saved;
  saved.tabs = {{1, "https://a.example/", "", false}, {2, "https://b.example/", "", false}};
  const std::vector<ReopenTab> plan = reopen_plan(saved);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_FALSE(plan[0].current);
  EXPECT_TRUE(plan[1].current);
  EXPECT_TRUE(reopen_plan(SavedThread{}).empty());
}

// One line of a notice: a tab reopened (or not) under its id.
ReopenedTab notice_tab(int64_t id, std::string url, bool opened, bool current = false,
                       std::string problem = "") {
  ReopenedTab tab;
  tab.tab_id = id;
  tab.url = std::move(url);
  tab.opened = opened;
  tab.current = current;
  tab.problem = std::move(problem);
  return tab;
}

TEST(RestartNotice, SaysTheTabsWereReloadedUnderTheSameIdsAndWhichAreGone) {
  const std::string notice =
      restart_notice({notice_tab(1, "https://a.example/x", true), notice_tab(4, "", true, true),
                      notice_tab(5, "https://b.example/", false, false, "timeout"),
                      notice_tab(6, "https://c.example/", true, false, "net::ERR_CONNECTION_REFUSED")},
                     ReopenCause::kKeelRestarted, true);
  EXPECT_NE(notice.find("keel restarted"), std::string::npos) << notice;
  EXPECT_NE(notice.find("relaunched"), std::string::npos) << notice;
  EXPECT_NE(notice.find("under the same tab ids"), std::string::npos) << notice;
  EXPECT_NE(notice.find("\n  tab 1: https://a.example/x\n"), std::string::npos) << notice;
  EXPECT_NE(notice.find("\n  tab 4 (current): blank\n"), std::string::npos) << notice;
  EXPECT_NE(notice.find("tab 5 (https://b.example/) is gone: it could not be reopened (timeout)"),
            std::string::npos)
      << notice;
  EXPECT_NE(notice.find("tab 6: https://c.example/ (did not load: net::ERR_CONNECTION_REFUSED)"),
            std::string::npos)
      << notice;
  EXPECT_EQ(notice.find("was tab"), std::string::npos) << "no old -> new map: " << notice;
  EXPECT_NE(notice.find("refs from earlier snapshots no longer work"), std::string::npos) << notice;
  EXPECT_NE(notice.find("take a new snapshot"), std::string::npos) << notice;
  EXPECT_EQ(notice.find("temporary"), std::string::npos) << notice;
}

TEST(RestartNotice, SaysThatATemporaryProfileLostItsLogins) {
  const std::string notice =
      restart_notice({notice_tab(1, "https://a.example/", true)}, ReopenCause::kKeelRestarted, false);
  EXPECT_NE(notice.find("cookies and logins from before the restart are gone"), std::string::npos) << notice;
}

TEST(RestartNotice, ABrowserRelaunchIsNamedAsSuch) {
  const std::string notice =
      restart_notice({notice_tab(2, "https://a.example/", true)}, ReopenCause::kBrowserRelaunched, false);
  EXPECT_EQ(notice.find("keel restarted"), std::string::npos) << notice;
  EXPECT_NE(notice.find("The browser had exited and was relaunched"), std::string::npos) << notice;
  EXPECT_NE(notice.find("tab 2: https://a.example/"), std::string::npos) << notice;
  EXPECT_NE(notice.find("cookies and logins from before the relaunch are gone"), std::string::npos) << notice;
}

TEST(RestartNotice, ABrowserKeelIsAttachedToIsNeitherRelaunchedNorItsProfileTemporary) {
  const std::string again = restart_notice({notice_tab(2, "https://a.example/", true)},
                                           ReopenCause::kBrowserRelaunched, false, /*attached=*/true);
  EXPECT_NE(again.find("attached to it again"), std::string::npos) << again;
  EXPECT_EQ(again.find("relaunched"), std::string::npos) << again;
  EXPECT_EQ(again.find("temporary"), std::string::npos) << again;
  const std::string restarted = restart_notice({notice_tab(2, "https://a.example/", true)},
                                               ReopenCause::kKeelRestarted, false, /*attached=*/true);
  EXPECT_NE(restarted.find("keel restarted and attached to the browser again"), std::string::npos)
      << restarted;
  EXPECT_EQ(restarted.find("relaunched"), std::string::npos) << restarted;
  EXPECT_EQ(restarted.find("temporary"), std::string::npos) << restarted;
}

}  // namespace
}  // namespace keel::browser
