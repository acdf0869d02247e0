#include "browser/snapshot.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "browser/browser_errors.h"
#include "util/utf8.h"

namespace keel::browser {
namespace {

using nlohmann::json;

const std::filesystem::path kTestdata = KEEL_BROWSER_TESTDATA;

// Recorded from snapshot_recording.html in headless Chromium (see that file).
json recorded(const std::string& name) {
  std::ifstream in(kTestdata / name);
  return json::parse(in);
}

FrameOutline recorded_frame(const std::string& name) {
  auto frame = parse_frame_outline(recorded(name));
  EXPECT_TRUE(frame) << frame.error().to_string();
  return frame ? *frame : FrameOutline{};
}

FrameTree recorded_page() {
  FrameTree tree;
  tree.outline = recorded_frame("snapshot_main_frame.json");
  ChildFrame child;
  child.iframe_index = 6;  // "e6 iframe" in the main frame
  child.tree.outline = recorded_frame("snapshot_child_frame.json");
  child.tree.ref_prefix = "f1e";
  tree.children.push_back(std::move(child));
  return tree;
}

std::vector<std::string> text_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> printed(const Outline& outline) {
  return text_lines(outline_text(outline, 1 << 20));
}

// An outline of `count` ref lines "eN button "Item N"", the first `in_view` of them in the viewport.
Outline synthetic(size_t count, size_t in_view) {
  Outline outline;
  for (size_t i = 0; i < count; ++i) {
    OutlineLine line;
    line.text = "e" + std::to_string(i + 1) + " button \"Item " + std::to_string(i) + "\"";
    line.in_view = i < in_view;
    line.is_ref = true;
    outline.lines.push_back(line);
  }
  outline.ref_count = count;
  return outline;
}

TEST(SnapshotParseTest, ReadsARecordedFrame) {
  const FrameOutline frame = recorded_frame("snapshot_main_frame.json");
  EXPECT_EQ(frame.title, "Probe home");
  EXPECT_EQ(frame.lines.size(), 20u);
  EXPECT_EQ(frame.refs.size(), 13u);
  ASSERT_EQ(frame.iframes.size(), 1u);
  EXPECT_EQ(frame.lines[frame.iframes[0].line], "e6 iframe");
  EXPECT_EQ(frame.refs[0].role, "textbox");
  EXPECT_EQ(frame.refs[0].name, "Search");
  EXPECT_TRUE(frame.refs[0].in_viewport);
  EXPECT_FALSE(frame.refs.back().in_viewport);  // "Below the fold"
  EXPECT_FALSE(frame.truncated);
  EXPECT_EQ(frame.next_index, 14);
}

TEST(SnapshotParseTest, RefusesMalformedResultsWithACode) {
  const json good = recorded("snapshot_main_frame.json");
  std::vector<json> bad;
  bad.push_back(json::array());
  bad.push_back(json::object());
  json no_strings = good;
  no_strings["lines"][0] = 5;
  bad.push_back(no_strings);
  json short_view = good;
  short_view["inView"] = "1";
  bad.push_back(short_view);
  json odd_view = good;
  odd_view["inView"] = std::string(good["lines"].size(), 'x');
  bad.push_back(odd_view);
  json line_out_of_range = good;
  line_out_of_range["refs"][0]["line"] = 999;
  bad.push_back(line_out_of_range);
  json zero_index = good;
  zero_index["refs"][0]["index"] = 0;
  bad.push_back(zero_index);
  json bad_rect = good;
  bad_rect["refs"][0]["rect"] = json::array({1, 2});
  bad.push_back(bad_rect);
  json nan_rect = good;
  nan_rect["refs"][0]["rect"][0] = "wide";
  bad.push_back(nan_rect);
  json no_role = good;
  no_role["refs"][0].erase("role");
  bad.push_back(no_role);
  json iframe_out_of_range = good;
  iframe_out_of_range["iframes"][0]["line"] = -1;
  bad.push_back(iframe_out_of_range);
  for (const json& result : bad) {
    const auto parsed = parse_frame_outline(result);
    ASSERT_FALSE(parsed) << result.dump().substr(0, 200);
    EXPECT_EQ(parsed.error().code(), codes::kBrowserBadScriptResult);
  }
}

TEST(SnapshotParseTest, AcceptsIntegralDoublesAsJavaScriptSendsThem) {
  json result = recorded("snapshot_child_frame.json");
  result["refs"][0]["index"] = 1.0;
  result["refs"][0]["rect"] = json::array({8.0, 20.4, 200.0, 21.0});
  const auto parsed = parse_frame_outline(result);
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  EXPECT_EQ(parsed->refs[0].index, 1);
  EXPECT_EQ(parsed->refs[0].rect[1], 20);
}

TEST(SnapshotMergeTest, SplicesTheChildFrameUnderItsIframeLine) {
  const Outline outline = merge_frames(recorded_page());
  EXPECT_EQ(outline.ref_count, 14u);
  EXPECT_TRUE(outline.notes.empty());
  const std::vector<std::string> lines = printed(outline);
  const auto iframe = std::find(lines.begin(), lines.end(), "e6 iframe");
  ASSERT_NE(iframe, lines.end());
  EXPECT_EQ(*(iframe + 1), " Frame text");
  EXPECT_EQ(*(iframe + 2), " f1e1 button \"Cross-origin frame button\"");
  EXPECT_EQ(*(iframe + 3), "list (3 items)");
  const size_t at = static_cast<size_t>(iframe - lines.begin()) + 2;
  EXPECT_EQ(outline.lines[at].level, 1);
  EXPECT_TRUE(outline.lines[at].is_ref);
}

TEST(SnapshotMergeTest, KeepsListMarkersAndLevels) {
  const Outline outline = merge_frames(recorded_page());
  const std::vector<std::string> lines = printed(outline);
  const auto item = std::find(lines.begin(), lines.end(), " - e7 link \"Item 0\" → #i0");
  ASSERT_NE(item, lines.end());
  EXPECT_EQ(*(item + 1), "   e8 button \"Buy 0\"");
  const size_t at = static_cast<size_t>(item - lines.begin());
  EXPECT_TRUE(outline.lines[at].list_item);
  EXPECT_EQ(outline.lines[at].level, 1);
  EXPECT_EQ(outline.lines[at + 1].level, 1);  // the item's other lines are its siblings under the list
}

TEST(SnapshotMergeTest, NotesAChildWithoutItsIframeLineAndATruncatedWalk) {
  FrameTree tree = recorded_page();
  tree.children[0].iframe_index = 99;
  tree.outline.truncated = true;
  tree.outline.truncated_reason = "stopped after 200000 elements";
  const Outline outline = merge_frames(tree);
  ASSERT_EQ(outline.notes.size(), 2u);
  EXPECT_NE(outline.notes[0].find("not shown"), std::string::npos);
  EXPECT_NE(outline.notes[1].find("stopped after 200000 elements"), std::string::npos);
  EXPECT_EQ(outline.ref_count, 13u);
}

TEST(SnapshotMergeTest, AChildFrameOutOfTheViewportIsOutOfTheViewport) {
  FrameTree tree = recorded_page();
  tree.outline.in_view[tree.outline.iframes[0].line] = false;
  const Outline outline = merge_frames(tree);
  for (const OutlineLine& line : outline.lines) {
    if (line.text.starts_with("f1e1")) {
      EXPECT_FALSE(line.in_view);
    }
  }
}

TEST(SnapshotIssueTest, IssuesEveryRefOfAFrame) {
  RefTable table;
  const FrameOutline frame = recorded_frame("snapshot_main_frame.json");
  RefKey base;
  base.tab_id = 1;
  base.frame_id = "MAIN";
  base.loader_id = "L1";
  ASSERT_TRUE(issue_refs(table, frame, base));
  EXPECT_EQ(table.size(), 13u);
  const auto item = table.find("e7", 1);
  ASSERT_TRUE(item);
  EXPECT_EQ(item->role, "link");
  EXPECT_EQ(item->name, "Item 0");
  EXPECT_EQ(table.next_index(0), frame.next_index);
  ASSERT_TRUE(issue_refs(table, frame, base));  // the same snapshot again: the same refs
  EXPECT_EQ(table.size(), 13u);
}

TEST(SnapshotRenderTest, ShowsASmallPageWhole) {
  const Outline outline = merge_frames(recorded_page());
  RenderOptions options;
  options.title = "Probe home";
  options.url = "http://127.0.0.1:8731/index.html";
  options.tab_id = 1;
  const RenderedSnapshot rendered = render_outline(outline, options);
  const std::vector<std::string> lines = text_lines(rendered.text);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0],
            "page \"Probe home\" http://127.0.0.1:8731/index.html · tab 1 · viewport (14 of 14 refs)");
  EXPECT_EQ(std::vector<std::string>(lines.begin() + 1, lines.end()), printed(outline));
  EXPECT_EQ(rendered.shown_refs, 14u);
  EXPECT_EQ(rendered.omitted_lines, 0u);
}

TEST(SnapshotRenderTest, CapsTheTitleAndUrlAtACharacterBoundary) {
  RenderOptions options;
  options.title = "x";
  for (int i = 0; i < 100; ++i) options.title += "é";  // the 80-byte cap falls inside a character
  options.url = "http://127.0.0.1/" + std::string(300, 'a');
  const std::string header = text_lines(render_outline(Outline{}, options).text).at(0);
  EXPECT_TRUE(utf8_valid(header)) << header;
  EXPECT_NE(header.find("é…\""), std::string::npos) << header;
  EXPECT_LT(header.size(), 400u);
}

TEST(SnapshotRenderTest, ViewportFirstStaysWithinMaxCharsAndSaysWhatIsLeft) {
  const Outline outline = synthetic(3000, 20);
  RenderOptions options;
  options.max_chars = 4000;
  const RenderedSnapshot rendered = render_outline(outline, options);
  EXPECT_LE(rendered.text.size(), options.max_chars);
  const std::vector<std::string> lines = text_lines(rendered.text);
  // Whole lines only, the viewport's first, then the notice.
  const std::vector<std::string> all = printed(outline);
  const std::set<std::string> known(all.begin(), all.end());
  for (size_t i = 1; i + 1 < lines.size(); ++i) EXPECT_TRUE(known.contains(lines[i])) << lines[i];
  EXPECT_EQ(lines[1], all[0]);
  EXPECT_EQ(lines[20], all[19]);
  EXPECT_LT(rendered.shown_refs, 3000u);
  EXPECT_GE(rendered.shown_refs, 20u);
  EXPECT_EQ(lines.back(), "… " + thousands(3000 - rendered.shown_refs) +
                              " more refs below the viewport: scroll, browser_snapshot{mode:\"full\"}, "
                              "browser_snapshot{ref:…} for a part, or browser_find_text");
}

TEST(SnapshotRenderTest, ViewportLinesComeFirstWithTheirAncestors) {
  // A long list scrolled to its end: the list line is above the viewport, the last items inside it.
  Outline outline;
  OutlineLine list;
  list.text = "list (500 items)";
  outline.lines.push_back(list);
  for (size_t i = 0; i < 500; ++i) {
    OutlineLine item;
    item.text = "e" + std::to_string(i + 1) + " link \"Item " + std::to_string(i) + "\"";
    item.columns = 3;
    item.list_item = true;
    item.level = 1;
    item.is_ref = true;
    item.in_view = i >= 490;
    outline.lines.push_back(item);
  }
  outline.ref_count = 500;
  RenderOptions options;
  options.max_chars = 2000;
  const RenderedSnapshot rendered = render_outline(outline, options);
  const std::vector<std::string> lines = text_lines(rendered.text);
  ASSERT_GT(lines.size(), 3u);
  EXPECT_EQ(lines[1], "list (500 items)");
  EXPECT_NE(rendered.text.find(" - e500 link \"Item 499\""), std::string::npos);
  EXPECT_NE(rendered.text.find(" - e491 link \"Item 490\""), std::string::npos);
  EXPECT_NE(rendered.text.find(" - e1 link \"Item 0\""), std::string::npos);  // then from the top
  EXPECT_NE(rendered.text.find("above the viewport"), std::string::npos) << lines.back();
}

TEST(SnapshotRenderTest, FullModeGoesInDocumentOrder) {
  const Outline outline = synthetic(3000, 20);
  RenderOptions options;
  options.max_chars = 60'000;
  options.viewport_first = false;
  const RenderedSnapshot rendered = render_outline(outline, options);
  EXPECT_LE(rendered.text.size(), options.max_chars);
  EXPECT_NE(rendered.text.find("· full ("), std::string::npos);
  const std::vector<std::string> lines = text_lines(rendered.text);
  const std::vector<std::string> all = printed(outline);
  for (size_t i = 1; i + 1 < lines.size(); ++i) ASSERT_EQ(lines[i], all[i - 1]);
}

TEST(SnapshotRenderTest, NotesAndTextOnlyOmissionsAreSaid) {
  Outline outline;
  for (int i = 0; i < 400; ++i) {
    OutlineLine line;
    line.text = "some paragraph text number " + std::to_string(i);
    outline.lines.push_back(line);
  }
  outline.notes.push_back("the page walk stopped after 2000 ms; browser_find_text searches the whole page");
  RenderOptions options;
  options.max_chars = 2000;
  const std::string text = render_outline(outline, options).text;
  EXPECT_NE(text.find("more lines of text: browser_read_text"), std::string::npos);
  EXPECT_NE(text.find("Note: the page walk stopped after 2000 ms"), std::string::npos);
}

TEST(SnapshotScopeTest, RefScopeIsTheSubtreeRebased) {
  const Outline outline = merge_frames(recorded_page());
  OutlineScope scope;
  scope.ref = "e6";
  const auto scoped = scope_outline(outline, scope);
  ASSERT_TRUE(scoped) << scoped.error().to_string();
  EXPECT_EQ(printed(*scoped), (std::vector<std::string>{"e6 iframe", " Frame text",
                                                        " f1e1 button \"Cross-origin frame button\""}));
  EXPECT_EQ(scoped->ref_count, 2u);
  scope.ref = "e60";
  const auto missing = scope_outline(outline, scope);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), codes::kBrowserUnknownRef);
}

TEST(SnapshotScopeTest, DepthKeepsTheTopLevels) {
  const Outline outline = merge_frames(recorded_page());
  OutlineScope scope;
  scope.depth = 0;
  const auto scoped = scope_outline(outline, scope);
  ASSERT_TRUE(scoped);
  EXPECT_EQ(printed(*scoped),
            (std::vector<std::string>{"heading \"Probe\"", "form", "e5 link \"Other page\" → /other.html",
                                      "e6 iframe", "list (3 items)", "Footer text",
                                      "e13 button \"Below the fold\""}));
}

TEST(SnapshotScopeTest, FindKeepsMatchingLinesWithTheirAncestors) {
  const Outline outline = merge_frames(recorded_page());
  OutlineScope scope;
  scope.find = "BUY 1";
  const auto scoped = scope_outline(outline, scope);
  ASSERT_TRUE(scoped);
  EXPECT_EQ(printed(*scoped), (std::vector<std::string>{"list (3 items)", "   e10 button \"Buy 1\""}));
  scope.find = "cross-origin";
  EXPECT_EQ(printed(*scope_outline(outline, scope)),
            (std::vector<std::string>{"e6 iframe", " f1e1 button \"Cross-origin frame button\""}));
}

TEST(SnapshotBoxesTest, ChildFrameBoxesAreOffsetByTheirIframe) {
  FrameTree tree = recorded_page();
  const FrameRef iframe = tree.outline.refs[5];
  ASSERT_EQ(iframe.index, 6);
  const FrameRef inner = tree.children[0].tree.outline.refs[0];
  std::vector<RefBox> boxes = ref_boxes(tree);
  ASSERT_EQ(boxes.size(), 14u);
  EXPECT_EQ(boxes[0].ref, "e1");
  EXPECT_EQ(boxes[0].x, tree.outline.refs[0].rect[0]);
  const RefBox& child = boxes.back();
  EXPECT_EQ(child.ref, "f1e1");
  EXPECT_EQ(child.x, iframe.rect[0] + inner.rect[0]);
  EXPECT_EQ(child.y, iframe.rect[1] + inner.rect[1]);
  EXPECT_EQ(child.width, inner.rect[2]);

  tree.children[0].content_origin = std::array<int64_t, 2>{100, 200};  // as DOM.getBoxModel gives it
  boxes = ref_boxes(tree);
  EXPECT_EQ(boxes.back().x, 100 + inner.rect[0]);
  EXPECT_EQ(boxes.back().y, 200 + inner.rect[1]);

  tree.children[0].iframe_index = 99;
  EXPECT_EQ(ref_boxes(tree).size(), 13u);
}

TEST(SnapshotTextTest, FullOutlineIsCutAtALineBoundary) {
  const Outline outline = synthetic(1000, 0);
  const std::string text = outline_text(outline, 500);
  EXPECT_LE(text.size(), 500u);
  EXPECT_TRUE(text.ends_with("\n…\n"));
}

TEST(SnapshotDiffTest, ShowsRemovedAndAddedLinesInOrder) {
  const std::vector<std::string> before{"heading \"Cart\"", "e1 button \"Buy\"", "e2 link \"Home\"",
                                        "footer"};
  const std::vector<std::string> after{"heading \"Cart\"", "e3 button \"Checkout\"", "e2 link \"Home\"",
                                       "e4 textbox \"Coupon\"", "footer"};
  EXPECT_EQ(diff_outlines(before, after, 50),
            "- e1 button \"Buy\"\n+ e3 button \"Checkout\"\n+ e4 textbox \"Coupon\"\n");
  EXPECT_EQ(diff_outlines(before, before, 50), "");
}

TEST(SnapshotDiffTest, CapsTheLinesAndCountsTheRest) {
  std::vector<std::string> after;
  for (int i = 0; i < 30; ++i) after.push_back("line " + std::to_string(i));
  const std::string diff = diff_outlines({}, after, 10);
  EXPECT_EQ(text_lines(diff).size(), 11u);
  EXPECT_TRUE(diff.ends_with("… 20 more changes\n"));
}

TEST(SnapshotDiffTest, LargeChangesFallBackToCountedLines) {
  std::vector<std::string> before;
  std::vector<std::string> after;
  for (int i = 0; i < 3000; ++i) {
    before.push_back("row " + std::to_string(i));
    after.push_back("row " + std::to_string(2999 - i));  // reversed: every line moved
  }
  after.push_back("new row");
  before.push_back("gone row");
  EXPECT_EQ(diff_outlines(before, after, 10), "- gone row\n+ new row\n");
}

TEST(SnapshotTextTest, ThousandsSeparators) {
  EXPECT_EQ(thousands(0), "0");
  EXPECT_EQ(thousands(999), "999");
  EXPECT_EQ(thousands(1000), "1,000");
  EXPECT_EQ(thousands(2950123), "2,950,123");
}

}  // namespace
}  // namespace keel::browser
