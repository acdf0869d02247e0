// Approvals through the whole engine (spec §2, §5, §5.1, §6.1): the real PolicyGatekeeper on the test's
// store, a scripted model, and tools that count their executions.
#include <gtest/gtest.h>

#include <atomic>
#include <optional>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "policy/policy_gatekeeper.h"
#include "store/interaction_repository.h"
#include "store/run_repository.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

// A page tool (level L1, a write) whose target is the origin the page is on now. Like the browser's tools it
// resolves per thread (the scopes it was asked for are kept) and keeps the target each execution was given.
class PageTool final : public AgentTool {
 public:
  explicit PageTool(std::shared_ptr<std::string> origin) : origin_(std::move(origin)) {
    spec_ = testing::simple_spec("page_click", ToolEffects::kWrite);
    spec_.level = ToolLevel::kL1;
  }
  const ToolSpec& spec() const override { return spec_; }
  Result<ToolTarget> resolve_target_for(const ToolScope& scope, const json&) const override {
    MutexLock guard(mu_);
    scopes_.push_back(scope);
    return ToolTarget{.origin = *origin_};
  }
  void execute(ToolCallContext context, json, std::function<void(Result<ToolResult>)> done) override {
    {
      MutexLock guard(mu_);
      executed_targets_.push_back(context.target);
    }
    ++runs;
    done(text_result("clicked"));
  }
  std::vector<ToolScope> scopes() const {
    MutexLock guard(mu_);
    return scopes_;
  }
  std::vector<ToolTarget> executed_targets() const {
    MutexLock guard(mu_);
    return executed_targets_;
  }
  std::atomic<int> runs{0};

 private:
  std::shared_ptr<std::string> origin_;
  ToolSpec spec_;
  mutable Mutex mu_;
  mutable std::vector<ToolScope> scopes_ GUARDED_BY(mu_);
  std::vector<ToolTarget> executed_targets_ GUARDED_BY(mu_);
};

class ApprovalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto counted = std::make_shared<testing::LambdaTool>(
        testing::simple_spec("save", ToolEffects::kWrite), [this](ToolCallContext, json params, auto done) {
          ++saves;
          done(text_result("saved " + params.value("text", "")));
        });
    ASSERT_TRUE(h.tools.register_tool(counted));
    page = std::make_shared<PageTool>(origin);
    ASSERT_TRUE(h.tools.register_tool(page));
    open_gatekeeper();
    h.start();
    thread = h.create_thread();
  }
  void open_gatekeeper(PolicyMode mode = PolicyMode::kAskWrites) {
    h.set_gatekeeper(nullptr);
    auto opened = PolicyGatekeeper::open(h.store(), h.clock, h.ids, mode);
    ASSERT_TRUE(opened) << opened.error().to_string();
    gate = std::move(opened).value();
    h.set_gatekeeper(gate.get());
  }
  // Drops the engine and its gatekeeper and builds both again on the same store: a restart.
  void restart() {
    h.stop();
    open_gatekeeper();
    h.start();
  }
  // A turn whose model calls `tool` once, then answers "done"; returns its approval.request.
  AgentEvent turn_that_asks(const std::string& tool = "save", const std::string& text = "a") {
    h.provider.push(ScriptedResponse::tool_calls({{"c1", tool, json{{"text", text}}.dump()}}));
    h.provider.push(ScriptedResponse::text("done"));
    const size_t asked = h.log.of_type("approval.request").size();
    AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
    EXPECT_EQ(ack.type, "command.ack") << ack.payload.dump();
    return h.wait_event(thread, "approval.request", asked + 1);
  }
  AgentEvent respond(const std::string& approval_id, const std::string& decision,
                     json extra = json::object()) {
    json params = {{"threadId", thread}, {"approvalId", approval_id}, {"decision", decision}};
    for (auto& [key, value] : extra.items()) params[key] = value;
    return h.request("approval.response", params);
  }
  // The thread's last tool_result says the call was refused, mentioning `why` when given.
  void expect_last_result_refused(const std::string& why = "") {
    const std::optional<NodeRecord> result = last_result();
    ASSERT_TRUE(result.has_value());
    EXPECT_TRUE(result->body.value("refused", false)) << result->body.dump();
    if (!why.empty()) {
      EXPECT_NE(result->body.dump().find(why), std::string::npos) << result->body.dump();
    }
  }
  size_t count_kind(const std::string& kind) {
    size_t n = 0;
    for (const std::string& k : h.kinds(thread)) n += k == kind;
    return n;
  }
  std::optional<NodeRecord> last_result() {
    const std::vector<NodeRecord> path = h.path(thread);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      if (it->kind == NodeKind::kToolResult) return *it;
    }
    return std::nullopt;
  }

  EngineHarness h;
  std::unique_ptr<PolicyGatekeeper> gate;
  std::shared_ptr<std::string> origin = std::make_shared<std::string>("https://shop.example");
  std::shared_ptr<PageTool> page;
  std::atomic<int> saves{0};
  std::string thread;
};

TEST_F(ApprovalTest, AWriteAsksWithTheFullCallAndTheRunWaitsDurably) {
  AgentEvent asked = turn_that_asks("save", "hello");
  const json& p = asked.payload;
  EXPECT_EQ(p["tool"]["name"], "save");
  EXPECT_EQ(p["tool"]["effects"], "write");
  EXPECT_EQ(p["arguments"], (json{{"text", "hello"}}));
  EXPECT_EQ(p["offers"], (json{"accept", "acceptForSite", "decline"}));
  EXPECT_FALSE(p.value("tool", json::object()).value("digest", "").empty());
  const RunRecord run = h.run(p["runId"]);
  EXPECT_EQ(run.state, RunState::kWaitingApproval);
  ASSERT_TRUE(run.pending_tool && run.pending_tool->waits_for(WaitKind::kApproval));
  EXPECT_EQ(run.pending_tool->wait->id, p["approvalId"]);
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call"}));
  EXPECT_EQ(saves, 0);
}

TEST_F(ApprovalTest, AcceptRunsTheCallOnceAndTheTurnCompletes) {
  AgentEvent asked = turn_that_asks();
  AgentEvent ack = respond(asked.payload["approvalId"], "accept");
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["stopReason"], "end");
  EXPECT_EQ(saves, 1);
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call",
                                      "approval_decision", "tool_result", "assistant_message"}));
  const std::optional<NodeRecord> result = last_result();
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->body.value("isError", false));
}

TEST_F(ApprovalTest, DeclineTellsTheModelItWasRefusedAndDoesNotCountAsAFailure) {
  AgentEvent asked = turn_that_asks();
  ASSERT_EQ(respond(asked.payload["approvalId"], "decline", {{"reason", "not today"}}).type, "command.ack");
  h.wait_complete(thread, 1);
  EXPECT_EQ(saves, 0);
  expect_last_result_refused("not today");
  EXPECT_EQ(h.run(asked.payload["runId"]).failure_streak, 0);
  // The model's next request carried the refusal.
  const auto requests = h.provider.requests();
  ASSERT_FALSE(requests.empty());
  ASSERT_FALSE(requests.back().messages.empty());
  ASSERT_FALSE(requests.back().messages.back().content.empty());
  EXPECT_NE(requests.back().messages.back().content.front().text.find("declined"), std::string::npos);
}

TEST_F(ApprovalTest, AcceptForSiteWritesARuleSoTheSameCallRunsWithoutAskingNextTime) {
  AgentEvent asked = turn_that_asks("page_click");
  ASSERT_EQ(respond(asked.payload["approvalId"], "acceptForSite").type, "command.ack");
  h.wait_complete(thread, 1);
  EXPECT_EQ(page->runs, 1);
  EXPECT_EQ(gate->describe()["rules"].size(), 1u);
  h.provider.push(ScriptedResponse::tool_calls({{"c2", "page_click", "{}"}}));
  h.provider.push(ScriptedResponse::text("done again"));
  h.run_turn(thread, "again");
  EXPECT_EQ(page->runs, 2);
  EXPECT_EQ(h.log.of_type("approval.request").size(), 1u);
  // The rule is the site's, typed: another origin still asks.
  *origin = "https://shop.example.evil.com";
  turn_that_asks("page_click");
}

TEST_F(ApprovalTest, TheSameDecisionAgainIsAcknowledgedAndADifferentOneRefusedWithoutASecondAuditNode) {
  AgentEvent asked = turn_that_asks();
  const std::string id = asked.payload["approvalId"];
  AgentEvent first = h.request_as("answer-1", "approval.response",
                                  {{"threadId", thread}, {"approvalId", id}, {"decision", "accept"}});
  ASSERT_EQ(first.type, "command.ack");
  // The same submission again replays the receipt; the same payload under a new submission is ACKed as
  // already settled; a different payload is refused with invalid_command. Live waiter, then no waiter.
  for (int round = 0; round < 2; ++round) {
    AgentEvent replay = h.request_as("answer-1", "approval.response",
                                     {{"threadId", thread}, {"approvalId", id}, {"decision", "accept"}});
    EXPECT_EQ(replay.type, "command.ack");
    EXPECT_TRUE(replay.payload["replayed"].get<bool>());
    AgentEvent same = respond(id, "accept");
    EXPECT_EQ(same.type, "command.ack");
    EXPECT_TRUE(same.payload["result"].value("alreadySettled", false));
    AgentEvent other = respond(id, "decline");
    ASSERT_EQ(other.type, "command.rejected");
    EXPECT_EQ(other.payload["error"]["code"], codes::kInvalidCommand);
    if (round == 0) h.wait_complete(thread, 1);
  }
  EXPECT_EQ(count_kind("approval_decision"), 1u);
  EXPECT_EQ(count_kind("tool_result"), 1u);
  EXPECT_EQ(saves, 1);
}

TEST_F(ApprovalTest, BadResponsesAreRefusedWithCodesAndChangeNothing) {
  AgentEvent asked = turn_that_asks();
  const std::string id = asked.payload["approvalId"];
  auto code_of = [&](json params) {
    params["threadId"] = params.value("threadId", thread);
    AgentEvent answer = h.request("approval.response", params);
    EXPECT_EQ(answer.type, "command.rejected") << answer.payload.dump();
    return answer.payload["error"].value("code", "");
  };
  EXPECT_EQ(code_of({{"approvalId", "nope"}, {"decision", "accept"}}), codes::kApprovalNotFound);
  EXPECT_EQ(code_of({{"approvalId", id}, {"decision", "maybe"}}), codes::kInvalidArgument);
  EXPECT_EQ(code_of({{"approvalId", id}}), codes::kInvalidArgument);
  EXPECT_EQ(code_of({{"approvalId", 7}, {"decision", "accept"}}), codes::kInvalidArgument);
  EXPECT_EQ(code_of({{"approvalId", id}, {"decision", "accept"}, {"reason", 5}}), codes::kInvalidArgument);
  const std::string other = h.create_thread();
  EXPECT_EQ(code_of({{"threadId", other}, {"approvalId", id}, {"decision", "accept"}}),
            codes::kApprovalThreadMismatch);
  EXPECT_EQ(h.run(asked.payload["runId"]).state, RunState::kWaitingApproval);
  EXPECT_EQ(count_kind("approval_decision"), 0u);
  // Still answerable.
  ASSERT_EQ(respond(id, "accept").type, "command.ack");
  h.wait_complete(thread, 1);
}

TEST_F(ApprovalTest, AcceptForSiteIsRefusedWhenTheRequestDidNotOfferIt) {
  ASSERT_EQ(h.request("policy.setMode", {{"threadId", thread}, {"mode", "ask_every_write"}}).type,
            "command.ack");
  AgentEvent asked = turn_that_asks();
  EXPECT_EQ(asked.payload["offers"], (json{"accept", "decline"}));
  AgentEvent answer = respond(asked.payload["approvalId"], "acceptForSite");
  ASSERT_EQ(answer.type, "command.rejected");
  EXPECT_EQ(answer.payload["error"]["code"], codes::kApprovalNotOffered);
}

TEST_F(ApprovalTest, WhileAnApprovalWaitsTheThreadRefusesWhatWouldMoveItButTakesEnqueueAndSteers) {
  AgentEvent asked = turn_that_asks();
  auto code_of = [&](const std::string& method, json params) {
    params["threadId"] = thread;
    AgentEvent answer = h.request(method, params);
    EXPECT_EQ(answer.type, "command.rejected") << method << " " << answer.payload.dump();
    return answer.payload["error"].value("code", "");
  };
  EXPECT_EQ(code_of("turn.submit", {{"input", "x"}}), codes::kThreadWaiting);
  EXPECT_EQ(code_of("turn.submit", {{"input", "x"}, {"parentNodeId", ""}}), codes::kThreadWaiting)
      << "a new branch would leave the waiting run's history";
  EXPECT_EQ(code_of("thread.fork", {}), codes::kThreadWaiting);
  EXPECT_EQ(code_of("thread.selectBranch", {{"leafNodeId", "x"}}), codes::kThreadWaiting);
  EXPECT_EQ(code_of("run.resume", {}), codes::kThreadWaiting);
  EXPECT_EQ(code_of("queue.start", {}), codes::kThreadWaiting);
  EXPECT_EQ(h.request("turn.enqueue", {{"threadId", thread}, {"input", "next"}}).type, "command.ack");
  // Once the continuation completed the turn, the queue runs.
  h.provider.push(ScriptedResponse::text("next done"));
  ASSERT_EQ(respond(asked.payload["approvalId"], "accept").type, "command.ack");
  h.wait_complete(thread, 2);
  EXPECT_EQ(saves, 1);
}

// Issue 14 point 20 / spec §3 (steers are refused only on mismatch, interrupt or end): a steer sent while an
// approval waits is ACKed once it is in the run's durable pending set, and enters the first model request
// after the wait is settled — after the call's result, never between the call and its result.
TEST_F(ApprovalTest, ASteerWhileAnApprovalWaitsIsAckedDurablyAndEntersTheFirstRequestAfterTheWait) {
  AgentEvent asked = turn_that_asks();
  const std::string turn_id = asked.payload["turnId"];
  AgentEvent steered =
      h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn_id}, {"input", "also b"}});
  ASSERT_EQ(steered.type, "command.ack") << steered.payload.dump();
  AgentEvent routed = h.request("turn.input", {{"threadId", thread}, {"input", "and c"}});
  ASSERT_EQ(routed.type, "command.ack") << routed.payload.dump();
  EXPECT_EQ(routed.payload["result"]["action"], "steered");
  {
    RunRepository runs(h.clock);
    auto tx = h.store().begin(TxMode::kRead);
    ASSERT_TRUE(tx);
    auto pending = runs.pending_steers(**tx, asked.payload["runId"].get<std::string>());
    ASSERT_TRUE(pending);
    EXPECT_EQ(pending->size(), 2u) << "ACKed means in the run's pending set";
  }
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call"}));
  ASSERT_EQ(respond(asked.payload["approvalId"], "accept").type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(saves, 1);
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message",
                                                       "tool_call", "approval_decision", "tool_result",
                                                       "user_message", "user_message", "assistant_message"}));
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  ASSERT_GE(requests[1].messages.size(), 2u);
  EXPECT_EQ(requests[1].messages.back().content[0].text, "and c");
  EXPECT_EQ(requests[1].messages[requests[1].messages.size() - 2].content[0].text, "also b");
}

TEST_F(ApprovalTest, ASteerAckedWhileAnApprovalWaitsSurvivesARestartAndAnInterruptKeepsIt) {
  AgentEvent asked = turn_that_asks();
  ASSERT_EQ(h.request("turn.steer",
                      {{"threadId", thread}, {"expectedTurnId", asked.payload["turnId"]}, {"input", "kept"}})
                .type,
            "command.ack");
  restart();
  // Recovery restores the wait on the thread's strand before this op runs there.
  EXPECT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "x"}}).payload["error"]["code"],
            codes::kThreadWaiting);
  AgentEvent again =
      h.request("turn.steer",
                {{"threadId", thread}, {"expectedTurnId", asked.payload["turnId"]}, {"input", "also kept"}});
  ASSERT_EQ(again.type, "command.ack") << "a restored wait takes steers too: " << again.payload.dump();
  ASSERT_EQ(h.request("turn.interrupt", {{"threadId", thread}}).type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call",
                                      "tool_result", "user_message", "user_message", "notice"}));
  EXPECT_EQ(saves, 0);
}

TEST_F(ApprovalTest, InterruptWithdrawsTheWaitAndALaterAnswerHasExpired) {
  AgentEvent asked = turn_that_asks();
  ASSERT_EQ(h.request("turn.interrupt", {{"threadId", thread}}).type, "command.ack");
  AgentEvent complete = h.wait_complete(thread, 1);
  EXPECT_EQ(complete.payload["stopReason"], "interrupted");
  const std::optional<NodeRecord> result = last_result();
  ASSERT_TRUE(result.has_value());
  EXPECT_TRUE(result->body.value("interrupted", false));
  AgentEvent late = respond(asked.payload["approvalId"], "accept");
  ASSERT_EQ(late.type, "command.rejected");
  EXPECT_EQ(late.payload["error"]["code"], codes::kApprovalExpired);
  EXPECT_EQ(saves, 0);
  // The thread is free again.
  h.provider.push(ScriptedResponse::text("fine"));
  EXPECT_EQ(h.run_turn(thread, "next").payload["stopReason"], "end");
}

TEST_F(ApprovalTest, AnApprovalSurvivesARestartIsSentAgainAndItsAnswerContinuesTheRun) {
  AgentEvent asked = turn_that_asks();
  const std::string id = asked.payload["approvalId"];
  restart();
  AgentEvent ack = h.request("initialize", {{"subscribe", true}});
  ASSERT_EQ(ack.type, "command.ack");
  // The snapshot marks the waiting run and what it waits for.
  const nlohmann::json& unfinished = ack.payload["result"]["unfinished"];
  ASSERT_EQ(unfinished.size(), 1u) << unfinished.dump();
  EXPECT_EQ(unfinished[0]["state"], "waiting_approval");
  EXPECT_EQ(unfinished[0]["pendingApprovals"], nlohmann::json::array({id}));
  AgentEvent resent = h.wait_event(thread, "approval.request", 2);
  EXPECT_EQ(resent.payload["approvalId"], id);
  EXPECT_TRUE(resent.payload.value("resent", false));
  // The recovered wait still holds the thread.
  EXPECT_EQ(h.request("turn.submit", {{"threadId", thread}, {"input", "x"}}).payload["error"]["code"],
            codes::kThreadWaiting);
  ASSERT_EQ(respond(id, "accept").type, "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(saves, 1);
  // Duplicates after the restart: acknowledged or refused, never applied twice.
  EXPECT_TRUE(respond(id, "accept").payload["result"].value("alreadySettled", false));
  EXPECT_EQ(respond(id, "decline").payload["error"]["code"], codes::kInvalidCommand);
  EXPECT_EQ(count_kind("approval_decision"), 1u);
}

// Issue 15, point 1: what the person is shown is computed before the approval is persisted and stored with
// it, so the request sent again after a restart shows the same thing.
TEST_F(ApprovalTest, TheRequestCarriesAPreviewThatARestartSendsAgainUnchanged) {
  AgentEvent asked = turn_that_asks("save", "hello");
  const json preview = asked.payload["preview"];
  EXPECT_EQ(preview["action"], "call tool");
  EXPECT_EQ(preview["change"]["format"], "arguments");
  EXPECT_EQ(preview["change"]["text"], "text: hello\n");
  EXPECT_EQ(preview["sensitive"], false);
  EXPECT_EQ(asked.payload["remember"]["threadId"], thread);
  restart();
  ASSERT_EQ(h.request("initialize", {{"subscribe", true}}).type, "command.ack");
  AgentEvent resent = h.wait_event(thread, "approval.request", 2);
  EXPECT_EQ(resent.payload["preview"], preview);
  EXPECT_EQ(resent.payload["remember"], asked.payload["remember"]);
}

// Issue 15, point 2: a remembered accept holds on its thread only; an injected write on another thread asks.
TEST_F(ApprovalTest, AnAcceptForSiteOnOneThreadLeavesWritesOnAnotherThreadAsking) {
  AgentEvent asked = turn_that_asks("save");
  ASSERT_EQ(respond(asked.payload["approvalId"], "acceptForSite", {{"remember", "untilRevoked"}}).type,
            "command.ack");
  h.wait_complete(thread, 1);
  EXPECT_EQ(saves, 1);
  const json rules = gate->describe()["rules"];
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0]["threadId"], thread);
  EXPECT_EQ(rules[0]["lifetime"], "untilRevoked");
  h.provider.push(ScriptedResponse::tool_calls({{"c2", "save", json{{"text", "b"}}.dump()}}));
  h.provider.push(ScriptedResponse::text("done"));
  h.run_turn(thread, "again");
  EXPECT_EQ(saves, 2) << "the same thread: remembered";
  const std::string other = h.create_thread();
  h.provider.push(ScriptedResponse::tool_calls({{"c3", "save", json{{"text", "injected"}}.dump()}}));
  h.provider.push(ScriptedResponse::text("done"));
  ASSERT_EQ(h.request("turn.submit", {{"threadId", other}, {"input", "go"}}).type, "command.ack");
  AgentEvent asked_other = h.wait_event(other, "approval.request", 1);
  EXPECT_EQ(asked_other.payload["tool"]["name"], "save");
  EXPECT_EQ(saves, 2);
}

TEST_F(ApprovalTest, ARememberLifetimeGoesOnlyWithAcceptForSite) {
  AgentEvent asked = turn_that_asks("save");
  AgentEvent refused = respond(asked.payload["approvalId"], "accept", {{"remember", "session"}});
  EXPECT_EQ(refused.payload["error"]["code"], codes::kInvalidArgument) << refused.payload.dump();
}

TEST_F(ApprovalTest, ADecisionCommittedBeforeACrashContinuesOnTheNextStart) {
  AgentEvent asked = turn_that_asks();
  const std::string id = asked.payload["approvalId"];
  h.stop();
  {
    // The decision committed; the process died before its continuation ran.
    InteractionRepository interactions(h.clock);
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(interactions.decide(**tx, id, ApprovalAnswer{.choice = ApprovalChoice::kAccept}));
    ASSERT_TRUE((*tx)->commit());
  }
  open_gatekeeper();
  h.start();
  // The continuation starts with the engine, before this test subscribes: watch the store, not events.
  h.wait_run_state(asked.payload["runId"], RunState::kCompleted);
  EXPECT_EQ(saves, 1);
}

TEST_F(ApprovalTest, APageThatMovedToAnotherOriginAfterTheApprovalIsNotActedOn) {
  AgentEvent asked = turn_that_asks("page_click");
  EXPECT_EQ(asked.payload["target"]["origin"], "https://shop.example");
  *origin = "https://attacker.example";  // the page navigated while the person was deciding
  ASSERT_EQ(respond(asked.payload["approvalId"], "accept").type, "command.ack");
  h.wait_complete(thread, 1);
  EXPECT_EQ(page->runs, 0);
  expect_last_result_refused("target changed");
}

TEST_F(ApprovalTest, TargetsAreResolvedForTheCallsThreadAndTheApprovedTargetReachesTheTool) {
  AgentEvent asked = turn_that_asks("page_click");
  const std::string call_id = asked.payload.value("toolCallId", "");
  ASSERT_FALSE(call_id.empty()) << asked.payload.dump();
  ASSERT_EQ(respond(asked.payload["approvalId"], "accept").type, "command.ack");
  h.wait_complete(thread, 1);
  ASSERT_EQ(page->runs, 1);
  // Resolved before asking and again when the approval let the call run, each time for this thread's call.
  const std::vector<ToolScope> scopes = page->scopes();
  ASSERT_GE(scopes.size(), 2u);
  for (const ToolScope& scope : scopes) {
    EXPECT_EQ(scope.thread_id, thread);
    EXPECT_EQ(scope.tool_call_id, call_id);
  }
  const std::vector<ToolTarget> executed = page->executed_targets();
  ASSERT_EQ(executed.size(), 1u);
  EXPECT_EQ(executed[0].origin, "https://shop.example");
}

TEST_F(ApprovalTest, ACallThatRunsWithoutAskingIsGivenTheTargetTheGatekeeperDecidedOn) {
  ASSERT_EQ(h.request("policy.addRule", {{"scope", "https://shop.example"}, {"decision", "allow"}}).type,
            "command.ack");
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "page_click", "{}"}}));
  h.provider.push(ScriptedResponse::text("ok"));
  h.run_turn(thread, "click");
  const std::vector<ToolTarget> executed = page->executed_targets();
  ASSERT_EQ(executed.size(), 1u);
  EXPECT_EQ(executed[0], ToolTarget{.origin = "https://shop.example"});
  EXPECT_TRUE(h.log.of_type("approval.request").empty());
}

TEST_F(ApprovalTest, AWriteOnAnOriginKeelHasNoHostPermissionForIsNeverDispatched) {
  ASSERT_EQ(h.request("policy.setHostPermissions", {{"patterns", {"https://shop.example"}}}).type,
            "command.ack");
  *origin = "https://elsewhere.example";
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "page_click", "{}"}}));
  h.provider.push(ScriptedResponse::text("ok"));
  h.run_turn(thread, "click elsewhere");
  EXPECT_EQ(page->runs, 0);
  EXPECT_TRUE(h.log.of_type("approval.request").empty());
  expect_last_result_refused("host permission");
}

TEST_F(ApprovalTest, ARuleRevokedAfterTheApprovalStopsTheDispatch) {
  AgentEvent asked = turn_that_asks("page_click");
  AgentEvent added = h.request("policy.addRule", {{"scope", "https://shop.example"}, {"decision", "deny"}});
  ASSERT_EQ(added.type, "command.ack") << added.payload.dump();
  ASSERT_EQ(respond(asked.payload["approvalId"], "accept").type, "command.ack");
  h.wait_complete(thread, 1);
  EXPECT_EQ(page->runs, 0);
  expect_last_result_refused();
}

}  // namespace
}  // namespace keel
