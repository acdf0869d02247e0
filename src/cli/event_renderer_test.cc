// What a person reads on the terminal: the text renderer's streaming, tool calls and results, steers, the
// end of a turn with its incomplete-reply note; the JSON line form; and the exit status of each ending.
#include "cli/event_renderer.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cli/turn_follower.h"

namespace keel::cli {
namespace {

using nlohmann::json;

AgentEvent event(std::string type, json payload) {
  return AgentEvent{.type = std::move(type), .thread_id = "t1", .seq = 1, .payload = std::move(payload)};
}

AgentEvent node(std::string kind, json body) {
  return event("item.complete",
               {{"node", {{"id", "n1"}, {"kind", std::move(kind)}, {"body", std::move(body)}}}});
}

TEST(TextRenderer, StreamsDeltasAndEndsTheLineBeforeAToolCall) {
  std::ostringstream out;
  TextRenderer renderer(out, RenderStyle{});
  renderer.render(event("item.delta", {{"itemId", "i"}, {"text", "Let me "}}));
  renderer.render(event("item.delta", {{"itemId", "i"}, {"text", "look."}}));
  renderer.render(
      node("tool_call", {{"toolCallId", "c1"}, {"name", "read_file"}, {"arguments", {{"path", "a"}}}}));
  EXPECT_EQ(out.str(), "Let me look.\n→ read_file {\"path\":\"a\"}\n");
}

TEST(TextRenderer, ShortensLongToolResultsAndNamesTheirTool) {
  std::ostringstream out;
  TextRenderer renderer(out, RenderStyle{.result_lines = 2});
  renderer.render(
      node("tool_call", {{"toolCallId", "c1"}, {"name", "list_files"}, {"arguments", json::object()}}));
  renderer.render(node(
      "tool_result",
      {{"toolCallId", "c1"}, {"content", {{{"type", "text"}, {"text", "a\nb\nc\nd"}}}}, {"isError", false}}));
  EXPECT_NE(out.str().find("← list_files\n  a\n  b\n  … (2 more lines)\n"), std::string::npos) << out.str();
}

TEST(TextRenderer, MarksFailedResultsAndShowsSteers) {
  std::ostringstream out;
  TextRenderer renderer(out, RenderStyle{});
  renderer.render(node("tool_result", {{"toolCallId", "c9"}, {"content", json::array()}, {"isError", true}}));
  renderer.render(
      node("user_message", {{"steered", true}, {"content", {{{"type", "text"}, {"text", "use b"}}}}}));
  EXPECT_NE(out.str().find("✗ result"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("↳ steer: use b"), std::string::npos) << out.str();
}

TEST(TextRenderer, TurnEndSaysAReplyMayBeIncompleteAndShowsCost) {
  std::ostringstream out;
  TextRenderer renderer(out, RenderStyle{});
  renderer.render(
      event("turn.complete", {{"turnId", "u"},
                              {"stopReason", "max_tokens"},
                              {"usage", {{"inputTokens", 10}, {"outputTokens", 5}, {"costUsd", 0.0125}}}}));
  EXPECT_NE(out.str().find("may be incomplete"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("10 in / 5 out tokens · $0.0125"), std::string::npos) << out.str();
}

TEST(TextRenderer, NoColourCodesWithoutATerminal) {
  std::ostringstream out;
  TextRenderer renderer(out, RenderStyle{.color = false});
  renderer.render(node("tool_call", {{"toolCallId", "c1"}, {"name", "x"}, {"arguments", json::object()}}));
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos);
  std::ostringstream coloured;
  TextRenderer colour(coloured, RenderStyle{.color = true});
  colour.render(node("tool_call", {{"toolCallId", "c1"}, {"name", "x"}, {"arguments", json::object()}}));
  EXPECT_NE(coloured.str().find('\x1b'), std::string::npos);
}

TEST(RenderJsonLine, WritesOneParsableLinePerEvent) {
  std::ostringstream out;
  render_json_line(out, event("item.delta", {{"text", "line\nbreak"}}));
  const std::string text = out.str();
  ASSERT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "a newline inside the text is escaped";
  EXPECT_EQ(json::parse(text)["payload"]["text"], "line\nbreak");
}

TEST(Shorten, CutsOnACharacterBoundary) {
  EXPECT_EQ(shorten("abc", 5), "abc");
  EXPECT_EQ(shorten("héllo", 2), "h…") << "the 2-byte é is not split";
}

TEST(DescribeTurnEnd, NamesEveryStopReason) {
  EXPECT_EQ(describe_turn_end({{"stopReason", "end"}}), "completed");
  EXPECT_EQ(describe_turn_end({{"stopReason", "interrupted"}}), "interrupted");
  EXPECT_NE(describe_turn_end({{"stopReason", "content_filter"}}).find("may be incomplete"),
            std::string::npos);
  EXPECT_NE(describe_turn_end({{"stopReason", "budget_pause"}}).find("budget"), std::string::npos);
  EXPECT_EQ(
      describe_turn_end({{"stopReason", "error"}, {"error", {{"code", "provider.x"}, {"message", "m"}}}}),
      "failed: provider.x: m");
}

TEST(ExitStatus, SaysHowTheTurnEnded) {
  EXPECT_EQ(exit_status_for({{"stopReason", "end"}}), 0);
  EXPECT_EQ(exit_status_for({{"stopReason", "error"}}), 1);
  EXPECT_EQ(exit_status_for({{"stopReason", "max_tokens"}}), 3);
  EXPECT_EQ(exit_status_for({{"stopReason", "content_filter"}}), 3);
  EXPECT_EQ(exit_status_for({{"stopReason", "budget_pause"}}), 4);
  EXPECT_EQ(exit_status_for({{"stopReason", "interrupted"}}), 130);
}

TEST(TerminalDecider, PoliciesAnswerWithoutAskingAndSaySo) {
  std::istringstream in;
  std::ostringstream out;
  const json request = {{"approvalId", "a1"},
                        {"tool", {{"name", "write_file"}, {"effects", "write"}}},
                        {"arguments", {{"path", "x"}}},
                        {"offers", {"accept", "decline"}}};
  TerminalDecider accept(ApprovalPolicy::kAccept, in, out, true);
  EXPECT_EQ(accept.decide_approval(request)["decision"], "accept");
  TerminalDecider decline(ApprovalPolicy::kDecline, in, out, true);
  EXPECT_EQ(decline.decide_approval(request)["decision"], "decline");
  EXPECT_NE(out.str().find("write_file (write)"), std::string::npos) << out.str();
}

TEST(TerminalDecider, AsksUntilItGetsAnOfferedAnswer) {
  std::istringstream in("maybe\ns\ny\n");
  std::ostringstream out;
  const json request = {{"tool", {{"name", "write_file"}}}, {"offers", {"accept", "decline"}}};
  TerminalDecider ask(ApprovalPolicy::kAsk, in, out, true);
  EXPECT_EQ(ask.decide_approval(request)["decision"], "accept")
      << "'s' is not offered here, so it is asked again";
  std::istringstream site_in("s\n");
  TerminalDecider site(ApprovalPolicy::kAsk, site_in, out, true);
  EXPECT_EQ(site.decide_approval({{"offers", {"accept", "acceptForSite", "decline"}}})["decision"],
            "acceptForSite");
}

TEST(TerminalDecider, DeclinesWhenThereIsNoTerminalOrTheInputEnds) {
  std::istringstream in;
  std::ostringstream out;
  TerminalDecider no_terminal(ApprovalPolicy::kAsk, in, out, false);
  EXPECT_EQ(no_terminal.decide_approval(json::object())["decision"], "decline");
  TerminalDecider closed(ApprovalPolicy::kAsk, in, out, true);
  EXPECT_EQ(closed.decide_approval(json::object())["decision"], "decline");
}

}  // namespace
}  // namespace keel::cli
