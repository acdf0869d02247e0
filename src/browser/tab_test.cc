// TabState follows a tab's frames and keel's world in each from CDP events, and ignores malformed ones.
#include "browser/tab.h"

#include <gtest/gtest.h>

namespace keel::browser {
namespace {

using nlohmann::json;

CdpEvent event(std::string method, json params, std::string session = "S") {
  return CdpEvent{std::move(method), std::move(params), std::move(session)};
}

TabState tab_with_main_frame() {
  TabState tab;
  tab.tab_id = 1;
  tab.target_id = "T";
  tab.session_id = "S";
  json tree = {
      {"frame", {{"id", "T"}, {"loaderId", "L0"}, {"url", "about:blank"}, {"securityOrigin", "://"}}},
      {"childFrames", json::array({{{"frame", {{"id", "C"}, {"parentId", "T"}, {"loaderId", "L1"}}}}})}};
  EXPECT_TRUE(tab.seed_frames(tree, "S", false));
  return tab;
}

json world_context(int64_t id, std::string frame_id, std::string name = "keel") {
  return {
      {"context", {{"id", id}, {"name", std::move(name)}, {"auxData", {{"frameId", std::move(frame_id)}}}}}};
}

TEST(TabState, TheFrameTreeSeedsTheMainFrameAndItsChildren) {
  TabState tab = tab_with_main_frame();
  ASSERT_NE(tab.main_frame(), nullptr);
  EXPECT_EQ(tab.main_frame()->frame_id, "T");
  EXPECT_EQ(tab.main_frame()->loader_id, "L0");
  ASSERT_NE(tab.frame("C"), nullptr);
  EXPECT_EQ(tab.frame("C")->parent_frame_id, "T");
  EXPECT_FALSE(tab.frame("C")->oopif);
}

TEST(TabState, ANavigationUpdatesUrlOriginAndLoader) {
  TabState tab = tab_with_main_frame();
  json params = {{"frame",
                  {{"id", "T"},
                   {"loaderId", "L9"},
                   {"url", "http://127.0.0.1:1/a"},
                   {"urlFragment", "#x"},
                   {"securityOrigin", "http://127.0.0.1:1"}}}};
  EXPECT_TRUE(tab.apply(event("Page.frameNavigated", params)));
  EXPECT_EQ(tab.main_frame()->url, "http://127.0.0.1:1/a#x");
  EXPECT_EQ(tab.main_frame()->origin, "http://127.0.0.1:1");
  EXPECT_EQ(tab.main_frame()->loader_id, "L9");
  json within = {{"frameId", "T"}, {"url", "http://127.0.0.1:1/a#y"}};
  EXPECT_TRUE(tab.apply(event("Page.navigatedWithinDocument", within)));
  EXPECT_EQ(tab.main_frame()->url, "http://127.0.0.1:1/a#y");
}

TEST(TabState, OnlyKeelsWorldIsRecordedAndEachNewOneCountsAGeneration) {
  TabState tab = tab_with_main_frame();
  EXPECT_FALSE(tab.apply(event("Runtime.executionContextCreated", world_context(3, "T", ""))));
  EXPECT_EQ(tab.main_frame()->world_context_id, 0);
  EXPECT_TRUE(tab.apply(event("Runtime.executionContextCreated", world_context(4, "T"))));
  EXPECT_EQ(tab.main_frame()->world_context_id, 4);
  EXPECT_EQ(tab.main_frame()->world_generation, 1);
  json destroyed = {{"executionContextId", 4}};
  EXPECT_TRUE(tab.apply(event("Runtime.executionContextDestroyed", destroyed)));
  EXPECT_EQ(tab.main_frame()->world_context_id, 0);
  EXPECT_TRUE(tab.apply(event("Runtime.executionContextCreated", world_context(7, "T"))));
  EXPECT_EQ(tab.main_frame()->world_generation, 2);
}

TEST(TabState, ContextsClearedEndsTheWorldsOfThatSessionOnly) {
  TabState tab = tab_with_main_frame();
  tab.adopt_oopif("C", "S2");
  EXPECT_TRUE(tab.apply(event("Runtime.executionContextCreated", world_context(4, "T"))));
  EXPECT_TRUE(tab.apply(event("Runtime.executionContextCreated", world_context(4, "C", "keel"), "S2")));
  EXPECT_TRUE(tab.apply(event("Runtime.executionContextsCleared", json::object(), "S2")));
  EXPECT_EQ(tab.frame("C")->world_context_id, 0);
  EXPECT_EQ(tab.main_frame()->world_context_id, 4);
}

TEST(TabState, AnOutOfProcessFrameMovesToItsOwnSessionAndLeavesWithIt) {
  TabState tab = tab_with_main_frame();
  json swapped = {{"frameId", "C"}, {"reason", "swap"}};
  EXPECT_FALSE(tab.apply(event("Page.frameDetached", swapped)));
  tab.adopt_oopif("C", "S2");
  ASSERT_NE(tab.frame("C"), nullptr);
  EXPECT_TRUE(tab.frame("C")->oopif);
  EXPECT_EQ(tab.frame("C")->session_id, "S2");
  json nested = {{"frameId", "N"}, {"parentFrameId", "C"}};
  EXPECT_TRUE(tab.apply(event("Page.frameAttached", nested, "S2")));
  EXPECT_EQ(tab.frame("N")->session_id, "S2");
  EXPECT_TRUE(tab.drop_session("S2"));
  EXPECT_EQ(tab.frame("C"), nullptr);
  EXPECT_EQ(tab.frame("N"), nullptr);
  EXPECT_NE(tab.main_frame(), nullptr);
}

TEST(TabState, ARemovedFrameTakesItsDescendantsAlong) {
  TabState tab = tab_with_main_frame();
  json nested = {{"frameId", "N"}, {"parentFrameId", "C"}};
  EXPECT_TRUE(tab.apply(event("Page.frameAttached", nested)));
  json removed = {{"frameId", "C"}, {"reason", "remove"}};
  EXPECT_TRUE(tab.apply(event("Page.frameDetached", removed)));
  EXPECT_EQ(tab.frame("C"), nullptr);
  EXPECT_EQ(tab.frame("N"), nullptr);
}

TEST(TabState, MalformedEventsChangeNothing) {
  TabState tab = tab_with_main_frame();
  const auto before = tab.frames.size();
  EXPECT_FALSE(tab.apply(event("Page.frameNavigated", json::array())));
  EXPECT_FALSE(tab.apply(event("Page.frameNavigated", json{{"frame", 3}})));
  EXPECT_FALSE(tab.apply(event("Page.frameAttached", json{{"frameId", 5}})));
  EXPECT_FALSE(tab.apply(event("Runtime.executionContextCreated", json{{"context", "x"}})));
  EXPECT_FALSE(tab.apply(event("Runtime.executionContextCreated", world_context(0, "T"))));
  EXPECT_FALSE(tab.apply(event("Runtime.executionContextDestroyed", json{{"executionContextId", "4"}})));
  EXPECT_FALSE(tab.apply(event("Page.frameDetached", json{{"frameId", "nope"}})));
  EXPECT_FALSE(tab.seed_frames(json("x"), "S", false));
  EXPECT_EQ(tab.frames.size(), before);
  EXPECT_EQ(tab.main_frame()->world_context_id, 0);
}

}  // namespace
}  // namespace keel::browser
