#include "browser/ref_table.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "browser/browser_errors.h"
#include "util/utf8.h"

namespace keel::browser {
namespace {

RefKey key(int64_t tab, std::string frame, int64_t ordinal, int64_t index, std::string loader = "L1") {
  RefKey k;
  k.tab_id = tab;
  k.target_id = "T" + std::to_string(tab);
  k.session_id = "S" + std::to_string(tab);
  k.frame_id = std::move(frame);
  k.loader_id = std::move(loader);
  k.frame_ordinal = ordinal;
  k.world_generation = 1;
  k.js_index = index;
  return k;
}

TEST(RefNameTest, NamesMainAndSubframeRefs) {
  EXPECT_EQ(ref_name(0, 12), "e12");
  EXPECT_EQ(ref_name(2, 7), "f2e7");
}

TEST(RefNameTest, ParsesOnlyWellFormedRefs) {
  const auto main = parse_ref("e12");
  ASSERT_TRUE(main);
  EXPECT_EQ(main->frame_ordinal, 0);
  EXPECT_EQ(main->js_index, 12);
  const auto sub = parse_ref("f2e7");
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->frame_ordinal, 2);
  EXPECT_EQ(sub->js_index, 7);
  for (const char* bad : {"", "e", "e0", "e01", "E1", "e1x", "f0e1", "fe1", "f2", "f2e", "ref=e1", "e-1",
                          "e99999999999999999999", " e1"}) {
    EXPECT_FALSE(parse_ref(bad)) << bad;
  }
}

TEST(RefTableTest, IssuesRefsNamedByFrameOrdinalAndIndex) {
  RefTable table;
  table.begin_snapshot();
  const auto main = table.issue(key(1, "F1", 0, 1), "button", "Buy");
  ASSERT_TRUE(main) << main.error().to_string();
  EXPECT_EQ(main->ref, "e1");
  const auto sub = table.issue(key(1, "F2", 3, 1), "link", "Home");
  ASSERT_TRUE(sub);
  EXPECT_EQ(sub->ref, "f3e1");
  const auto found = table.find("f3e1", 1);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->role, "link");
  EXPECT_EQ(found->name, "Home");
  EXPECT_EQ(found->key, key(1, "F2", 3, 1));
}

TEST(RefTableTest, NextIndexContinuesAfterTheHighestIssuedPerOrdinal) {
  RefTable table;
  EXPECT_EQ(table.next_index(0), 1);
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 5), "button", "A"));
  ASSERT_TRUE(table.issue(key(2, "G1", 0, 9), "button", "B"));  // another tab shares the main-frame counter
  EXPECT_EQ(table.next_index(0), 10);
  EXPECT_EQ(table.next_index(1), 1);
}

TEST(RefTableTest, RefusesAnIndexIssuedForAnotherElement) {
  RefTable table;
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 1), "button", "Buy"));
  const auto other_name = table.issue(key(1, "F1", 0, 1), "button", "Sell");
  ASSERT_FALSE(other_name);
  EXPECT_EQ(other_name.error().code(), codes::kBrowserBadScriptResult);
  const auto other_document = table.issue(key(1, "F1", 0, 1, "L2"), "button", "Buy");
  ASSERT_FALSE(other_document);
  EXPECT_EQ(other_document.error().code(), codes::kBrowserBadScriptResult);
  EXPECT_EQ(table.find("e1", 1)->name, "Buy");  // the first element keeps the ref
}

TEST(RefTableTest, RefusesAnUnseenIndexBelowTheHighWaterMark) {
  RefTable table;
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 5), "button", "A"));
  const auto below = table.issue(key(1, "F1", 0, 3), "button", "B");
  ASSERT_FALSE(below);
  EXPECT_EQ(below.error().code(), codes::kBrowserBadScriptResult);
  EXPECT_FALSE(table.issue(key(1, "F1", 0, 0), "button", "C"));
  EXPECT_FALSE(table.issue(key(1, "F1", 0, 5 + RefTable::kMaxIndexStep + 1), "button", "D"));
  EXPECT_TRUE(table.issue(key(1, "F1", 0, 5 + RefTable::kMaxIndexStep), "button", "E"));
}

TEST(RefTableTest, ReissuingTheSameElementRefreshesItsSnapshotAndRevivesIt) {
  RefTable table;
  table.begin_snapshot();
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 1), "button", "Buy"));
  table.invalidate_all("the person took over the browser");
  EXPECT_EQ(table.find("e1", 1).error().code(), codes::kBrowserStaleRef);
  const int64_t second = table.begin_snapshot();
  const auto again = table.issue(key(1, "F1", 0, 1), "button", "Buy");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->snapshot_seq, second);
  EXPECT_TRUE(table.find("e1", 1));
}

TEST(RefTableTest, UnknownRefsSayTheyWereNeverIssued) {
  RefTable table;
  const auto never = table.find("e4", 1);
  ASSERT_FALSE(never);
  EXPECT_EQ(never.error().code(), codes::kBrowserUnknownRef);
  EXPECT_NE(never.error().message().find("never issued"), std::string::npos) << never.error().message();
  const auto garbage = table.find("button", 1);
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.error().code(), codes::kBrowserUnknownRef);
  EXPECT_NE(garbage.error().message().find("is not a ref"), std::string::npos);
}

TEST(RefTableTest, MessagesCutWhatTheModelPassedAtACharacterBoundary) {
  RefTable table;
  std::string long_ref;
  for (int i = 0; i < 30; ++i) long_ref += "é";  // 2 bytes each: byte 40 falls inside none, 41 inside one
  long_ref = "x" + long_ref;
  const auto found = table.find(long_ref, 1);
  ASSERT_FALSE(found);
  EXPECT_TRUE(utf8_valid(found.error().message())) << found.error().message();
  EXPECT_NE(found.error().message().find("…\" is not a ref"), std::string::npos) << found.error().message();
}

TEST(RefTableTest, RefOfAnotherTabNamesItsTab) {
  RefTable table;
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 12), "button", "Buy 1"));
  const auto found = table.find("e12", 2);
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().code(), codes::kBrowserWrongTab);
  EXPECT_NE(found.error().message().find("e12 (button \"Buy 1\") belongs to tab 1"), std::string::npos)
      << found.error().message();
  EXPECT_NE(found.error().message().find("browser_switch_tab{tab:1}"), std::string::npos);
}

TEST(RefTableTest, InvalidatingAFrameMakesOnlyItsRefsStaleWithTheReason) {
  RefTable table;
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 1), "button", "Main"));
  ASSERT_TRUE(table.issue(key(1, "F2", 1, 1), "button", "Sub"));
  table.invalidate_frame(1, "F2", "the frame navigated");
  EXPECT_TRUE(table.find("e1", 1));
  const auto stale = table.find("f1e1", 1);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code(), codes::kBrowserStaleRef);
  EXPECT_NE(stale.error().message().find("the frame navigated"), std::string::npos)
      << stale.error().message();
  EXPECT_NE(stale.error().message().find("browser_snapshot"), std::string::npos);
}

TEST(RefTableTest, StaleReasonWinsOverWrongTabAndTheFirstReasonStays) {
  RefTable table;
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 1), "button", "A"));
  ASSERT_TRUE(table.issue(key(2, "G1", 0, 2), "button", "B"));
  table.invalidate_tab(1, "the tab was closed");
  table.invalidate_all("keel restarted");
  const auto closed = table.find("e1", 2);
  ASSERT_FALSE(closed);
  EXPECT_EQ(closed.error().code(), codes::kBrowserStaleRef);
  EXPECT_NE(closed.error().message().find("the tab was closed"), std::string::npos);
  const auto restarted = table.find("e2", 2);
  ASSERT_FALSE(restarted);
  EXPECT_NE(restarted.error().message().find("keel restarted"), std::string::npos);
}

TEST(RefTableTest, RefsFromBeforeARestartAreRecognizedAndCountersContinue) {
  RefTable before;
  ASSERT_TRUE(before.issue(key(1, "F1", 0, 5), "button", "A"));
  ASSERT_EQ(before.frame_ordinal(1, "F2", false), 1);
  ASSERT_TRUE(before.issue(key(1, "F2", 1, 2), "link", "B"));
  const nlohmann::json marks = before.high_water();

  RefTable after;
  ASSERT_TRUE(after.restore_high_water(marks));
  const auto old_ref = after.find("e3", 1);
  ASSERT_FALSE(old_ref);
  EXPECT_EQ(old_ref.error().code(), codes::kBrowserUnknownRef);
  EXPECT_NE(old_ref.error().message().find("before keel restarted"), std::string::npos)
      << old_ref.error().message();
  EXPECT_NE(after.find("f1e2", 1).error().message().find("before keel restarted"), std::string::npos);
  EXPECT_NE(after.find("e6", 1).error().message().find("never issued"), std::string::npos);
  EXPECT_EQ(after.next_index(0), 6);
  EXPECT_EQ(after.next_index(1), 3);
  EXPECT_EQ(after.frame_ordinal(1, "F9", false), 2);  // the old ordinal 1 is not handed out again
}

TEST(RefTableTest, RestoreRefusesMalformedMarksAndNeverLowersCounters) {
  RefTable table;
  for (const char* bad : {R"([])", R"({"frames": 1})", R"({"frames": -1, "indices": {}})",
                          R"({"frames": 1, "indices": {"x": 1}})", R"({"frames": 1, "indices": {"0": "5"}})",
                          R"({"frames": 1, "indices": {"00": 5}})"}) {
    const auto restored = table.restore_high_water(nlohmann::json::parse(bad));
    ASSERT_FALSE(restored) << bad;
    EXPECT_EQ(restored.error().code(), codes::kBrowserBadScriptResult);
  }
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 9), "button", "A"));
  ASSERT_TRUE(table.restore_high_water(nlohmann::json::parse(R"({"frames": 0, "indices": {"0": 4}})")));
  EXPECT_EQ(table.next_index(0), 10);
}

TEST(RefTableTest, ForgetsTheOldestSnapshotsBeyondItsBoundButNeverTheLatest) {
  RefTable table(8);
  for (int64_t snapshot = 1; snapshot <= 3; ++snapshot) {
    table.begin_snapshot();
    for (int64_t i = 1; i <= 4; ++i) {
      const int64_t index = (snapshot - 1) * 4 + i;
      ASSERT_TRUE(table.issue(key(1, "F1", 0, index), "button", std::to_string(index)));
    }
    if (snapshot == 2) table.invalidate_frame(1, "F1", "the page navigated");
  }
  EXPECT_LE(table.size(), 8u);
  // The first snapshot's refs went first; the latest snapshot's are all kept.
  const auto forgotten = table.find("e1", 1);
  ASSERT_FALSE(forgotten);
  EXPECT_EQ(forgotten.error().code(), codes::kBrowserStaleRef);
  EXPECT_NE(forgotten.error().message().find("earlier snapshot"), std::string::npos)
      << forgotten.error().message();
  for (const char* ref : {"e9", "e10", "e11", "e12"}) EXPECT_TRUE(table.find(ref, 1)) << ref;
  EXPECT_NE(table.find("e13", 1).error().message().find("never issued"), std::string::npos);
  // A snapshot that shows a forgotten element again (its world kept the index) gets its ref back.
  table.begin_snapshot();
  const auto again = table.issue(key(1, "F1", 0, 1), "button", "1");
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_TRUE(table.find("e1", 1));

  RefTable small(2);
  small.begin_snapshot();
  for (int64_t i = 1; i <= 5; ++i) ASSERT_TRUE(small.issue(key(1, "F1", 0, i), "button", std::to_string(i)));
  EXPECT_EQ(small.size(), 5u);  // one snapshot's refs stay usable even beyond the bound
}

TEST(RefTableTest, PinKeepsTheFirstNodeAndRefusesAnother) {
  RefTable table;
  ASSERT_TRUE(table.issue(key(1, "F1", 0, 1), "button", "A"));
  ASSERT_TRUE(table.pin("e1", 42));
  ASSERT_TRUE(table.pin("e1", 42));
  EXPECT_EQ(table.find("e1", 1)->backend_node_id, 42);
  const auto moved = table.pin("e1", 43);
  ASSERT_FALSE(moved);
  EXPECT_EQ(moved.error().code(), codes::kBrowserStaleRef);
  EXPECT_EQ(table.pin("e2", 1).error().code(), codes::kBrowserUnknownRef);
}

TEST(RefTableTest, FrameOrdinalsAreStablePerFrameAndZeroForMainFrames) {
  RefTable table;
  EXPECT_EQ(table.frame_ordinal(1, "MAIN", true), 0);
  EXPECT_EQ(table.frame_ordinal(1, "A", false), 1);
  EXPECT_EQ(table.frame_ordinal(1, "B", false), 2);
  EXPECT_EQ(table.frame_ordinal(1, "A", false), 1);
  EXPECT_EQ(table.frame_ordinal(2, "A", false), 3);  // the same frame id in another tab is another frame
  EXPECT_EQ(table.high_water()["frames"], 3);
}

TEST(RefTableTest, ConcurrentIssueAndFindKeepEveryRef) {
  RefTable table;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&table, t] {
      for (int i = 1; i <= kPerThread; ++i) {
        const int64_t ordinal = t + 1;  // one counter per thread: no index is contended
        ASSERT_TRUE(table.issue(key(1, "F" + std::to_string(t), ordinal, i), "button", std::to_string(i)));
        ASSERT_TRUE(table.find(ref_name(ordinal, i), 1));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(table.size(), 2u * kPerThread);
}

}  // namespace
}  // namespace keel::browser
