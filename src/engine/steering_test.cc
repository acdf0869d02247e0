// Spec §3 through the DirectTransport: steer, enqueue, interrupt and turn.input, each checked against the
// persisted nodes and the answers the client gets.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_errors.h"
#include "engine/engine_harness.h"
#include "store/node_body.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

std::string turn_of(const AgentEvent& ack) { return ack.payload["result"].value("turnId", ""); }
std::string error_code(const AgentEvent& answer) { return answer.payload["error"].value("code", ""); }

// The text of every steered user message on the path, in order.
std::vector<std::string> steered_texts(EngineHarness& h, const std::string& thread) {
  std::vector<std::string> out;
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind == NodeKind::kUserMessage && node.body.value("steered", false)) {
      out.push_back(node.body["content"][0]["text"].get<std::string>());
    }
  }
  return out;
}

// Starts a turn whose first model response is held until h.provider.release(); returns the turn id.
// `then` are the responses to the requests after it.
std::string start_held_turn(EngineHarness& h, const std::string& thread, ScriptedResponse first,
                            std::vector<ScriptedResponse> then = {}) {
  const size_t held_before = h.provider.held();
  h.provider.push(ScriptedResponse::held(std::move(first)));
  for (ScriptedResponse& response : then) h.provider.push(std::move(response));
  AgentEvent ack = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  EXPECT_EQ(ack.type, "command.ack") << ack.payload.dump();
  EXPECT_TRUE(h.provider.wait_held(held_before + 1));
  return turn_of(ack);
}

TEST(SteeringTest, ASteerIsDurableWhenAckedAndReachesTheNextRequestAfterTheToolResult) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  const std::string turn =
      start_held_turn(h, thread, ScriptedResponse::tool_calls({{"c1", "echo", R"({"text":"a"})"}}),
                      {ScriptedResponse::text("done")});

  AgentEvent ack =
      h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "also b"}});
  ASSERT_EQ(ack.type, "command.ack") << ack.payload.dump();
  EXPECT_EQ(ack.payload["result"]["admissionSeq"], 1);
  // Durable at ACK time: the run's pending set holds it, and the leaf has not moved.
  {
    RunRepository runs(h.clock);
    auto tx = h.store().begin(TxMode::kRead);
    ASSERT_TRUE(tx);
    auto pending = runs.pending_steers(**tx, ack.payload["result"]["runId"].get<std::string>());
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_EQ((*pending)[0].id, ack.payload["result"]["steerId"]);
  }
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message"}));

  ASSERT_TRUE(h.provider.release());
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call",
                                      "tool_result", "user_message", "assistant_message"}));
  auto path = h.path(thread);
  EXPECT_EQ(path[5].body["steered"], true);
  EXPECT_EQ(path[5].body["steerId"], ack.payload["result"]["steerId"]);
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  ASSERT_FALSE(requests[1].messages.empty());
  EXPECT_EQ(requests[1].messages.back().role, Role::kUser);
  EXPECT_EQ(requests[1].messages.back().content[0].text, "also b");
  EXPECT_EQ(requests[0].messages.size(), 1u) << "the first request had not read the steer";
}

TEST(SteeringTest, SteersOfOneCutoffGoInAdmissionOrderExactlyOnce) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  const std::string turn = start_held_turn(
      h, thread, ScriptedResponse::tool_calls({{"c1", "echo", R"({"text":"a"})"}}),
      {ScriptedResponse::tool_calls({{"c2", "echo", R"({"text":"x"})"}}), ScriptedResponse::text("done")});
  for (const char* text : {"one", "two", "three"}) {
    ASSERT_EQ(h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", text}}).type,
              "command.ack");
  }
  ASSERT_TRUE(h.provider.release());
  h.wait_complete(thread, 1);
  EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"one", "two", "three"}));
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "assistant_message", "tool_call",
                                      "tool_result", "user_message", "user_message", "user_message",
                                      "assistant_message", "tool_call", "tool_result", "assistant_message"}));
}

TEST(SteeringTest, ASteerWhileTheFinalReplyStreamsMakesOneMoreRequest) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  const std::string turn = start_held_turn(h, thread, ScriptedResponse::text("first answer"),
                                           {ScriptedResponse::text("answering the steer")});
  ASSERT_EQ(
      h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "wait, one more"}})
          .type,
      "command.ack");
  ASSERT_TRUE(h.provider.release());
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
  EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message",
                                                       "user_message", "assistant_message"}));
  EXPECT_EQ(h.provider.requests().size(), 2u);
  EXPECT_EQ(h.log.of_type("turn.complete").size(), 1u);
}

TEST(SteeringTest, ASteerAfterTheTurnEndedIsRefusedWithAnAnswerThatSaysEnqueue) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::text("done"));
  AgentEvent submitted = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  h.wait_complete(thread, 1);
  const size_t nodes = h.path(thread).size();
  AgentEvent late = h.request(
      "turn.steer", {{"threadId", thread}, {"expectedTurnId", turn_of(submitted)}, {"input", "late"}});
  EXPECT_EQ(late.type, "command.rejected");
  EXPECT_EQ(error_code(late), codes::kTurnEnded);
  EXPECT_NE(late.payload["error"]["message"].get<std::string>().find("enqueue"), std::string::npos);
  EXPECT_EQ(h.path(thread).size(), nodes);
}

// The turn-end race (spec §3, ARCHITECTURE.md §7): a steer sent while the final reply arrives is either in
// the turn (and the model answers it) or refused with turn.ended; never accepted and then dropped. The
// final reply is delivered in parts (text, finish, end of stream), each held until released, and the
// steer is sent after 0, 1, 2 or all 3 parts. Before the last part the reply cannot be final yet, so the
// steer must be taken; after it, either outcome is right, and the invariant is checked.
// (AdmissionGateTest covers the decision itself, step by step.)
TEST(SteeringTest, ASteerAtEachPointOfTheFinalReplyIsEitherAnsweredOrRefusedNeverLost) {
  for (int released_before_steer = 0; released_before_steer <= 3; ++released_before_steer) {
    SCOPED_TRACE("parts released before the steer: " + std::to_string(released_before_steer));
    EngineHarness h;
    h.start();
    const std::string thread = h.create_thread();
    ScriptedResponse final_reply;
    final_reply.steps.push_back({testing::ScriptedStep::Kind::kHoldUntilReleased, {}, std::nullopt});
    final_reply.add(provider_event::TextDelta{"final"});
    final_reply.steps.push_back({testing::ScriptedStep::Kind::kHoldUntilReleased, {}, std::nullopt});
    final_reply.add(provider_event::Finish{StopReason::kEnd, "stop"});
    final_reply.steps.push_back({testing::ScriptedStep::Kind::kHoldUntilReleased, {}, std::nullopt});
    h.provider.push(std::move(final_reply));
    h.provider.push(ScriptedResponse::text("answering the steer"));
    const std::string turn = turn_of(h.request("turn.submit", {{"threadId", thread}, {"input", "go"}}));
    ASSERT_TRUE(h.provider.wait_held(1)) << "the request is out before the steer is sent";
    for (int part = 0; part < released_before_steer; ++part) {
      ASSERT_TRUE(h.provider.wait_held(1));
      ASSERT_TRUE(h.provider.release());
    }
    AgentEvent answer =
        h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "steer"}});
    for (int part = released_before_steer; part < 3; ++part) {
      ASSERT_TRUE(h.provider.wait_held(1));
      ASSERT_TRUE(h.provider.release());
    }
    EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
    if (released_before_steer < 3) {
      ASSERT_EQ(answer.type, "command.ack") << answer.payload.dump();
    }
    if (answer.type == "command.ack") {
      EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"steer"}));
      EXPECT_EQ(h.kinds(thread).back(), "assistant_message") << "the model answered the steer";
      EXPECT_EQ(h.provider.requests().size(), 2u);
    } else {
      ASSERT_EQ(answer.type, "command.rejected") << answer.payload.dump();
      EXPECT_EQ(error_code(answer), codes::kTurnEnded);
      EXPECT_TRUE(steered_texts(h, thread).empty());
      EXPECT_EQ(h.provider.requests().size(), 1u);
    }
    EXPECT_EQ(h.log.of_type("turn.complete").size(), 1u);
  }
}

// The last point: the steer is sent the moment turn.complete is delivered, before the actor may have let
// the turn go.
TEST(SteeringTest, ASteerSentOnTurnCompleteIsRefusedWithTurnEnded) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  std::string turn;
  auto steer_on_complete = h.transport->on_event([&](const AgentEvent& event) {
    if (event.type == "turn.complete" && event.thread_id == thread) {
      h.transport->send(
          Op{"turn.steer",
             "test-client",
             "late-steer",
             {{"threadId", thread}, {"expectedTurnId", event.payload["turnId"]}, {"input", "late"}}});
    }
  });
  h.provider.push(ScriptedResponse::text("done"));
  h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  h.wait_complete(thread, 1);
  AgentEvent answer;
  ASSERT_TRUE(h.log.wait_until([&](const std::vector<AgentEvent>& events) {
    for (const AgentEvent& e : events) {
      if (e.payload.value("submissionId", "") == "late-steer") {
        answer = e;
        return true;
      }
    }
    return false;
  }));
  EXPECT_EQ(answer.type, "command.rejected");
  EXPECT_EQ(error_code(answer), codes::kTurnEnded);
  EXPECT_TRUE(steered_texts(h, thread).empty());
}

TEST(SteeringTest, BadSteersGetCodedAnswersAndChangeNothing) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  const std::string other = h.create_thread();
  h.provider.push(ScriptedResponse::stall());
  const std::string other_turn = turn_of(h.request("turn.submit", {{"threadId", other}, {"input", "x"}}));
  ASSERT_TRUE(h.log.wait_until([&](const auto&) { return h.provider.requests().size() == 1; }));
  const std::string turn =
      start_held_turn(h, thread, ScriptedResponse::text("held"), {ScriptedResponse::text("done")});
  const size_t nodes = h.path(thread).size();

  auto steer = [&](json params) {
    params["threadId"] = thread;
    if (!params.contains("input")) params["input"] = "x";
    return h.request("turn.steer", params);
  };
  EXPECT_EQ(error_code(steer({{"expectedTurnId", other_turn}})), codes::kSteerTurnMismatch)
      << "another thread's turn";
  EXPECT_EQ(error_code(steer({{"expectedTurnId", "never-existed"}})), codes::kSteerTurnMismatch);
  EXPECT_EQ(error_code(steer(json::object())), codes::kInvalidArgument) << "no expectedTurnId";
  EXPECT_EQ(error_code(steer({{"expectedTurnId", turn}, {"input", ""}})), codes::kInputInvalid);
  EXPECT_EQ(
      error_code(steer({{"expectedTurnId", turn}, {"attachments", json::array({{{"nodeId", "ghost"}}})}})),
      codes::kAttachmentNotFound);
  EXPECT_EQ(
      error_code(steer({{"expectedTurnId", turn}, {"attachments", json::array({{{"runId", "ghost"}}})}})),
      codes::kAttachmentNotFound);
  EXPECT_EQ(error_code(steer({{"expectedTurnId", turn}, {"attachments", json::array({{{"path", "/etc"}}})}})),
            codes::kInvalidArgument);
  EXPECT_EQ(error_code(steer({{"expectedTurnId", turn}, {"attachments", "x"}})), codes::kInvalidArgument);

  // A duplicated submission replays its answer and admits one steer; the same id with another payload
  // is a conflict.
  const json params = {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "once"}};
  AgentEvent first = h.request_as("dup", "turn.steer", params);
  AgentEvent again = h.request_as("dup", "turn.steer", params);
  ASSERT_EQ(first.type, "command.ack");
  ASSERT_EQ(again.type, "command.ack");
  EXPECT_EQ(again.payload["replayed"], true);
  EXPECT_EQ(again.payload["result"], first.payload["result"]);
  json changed = params;
  changed["input"] = "twice";
  EXPECT_EQ(error_code(h.request_as("dup", "turn.steer", changed)), codes::kSubmissionConflict);
  // An attachment that exists is kept with the steer's message.
  const std::string first_node = h.path(thread).front().id;
  ASSERT_EQ(steer({{"expectedTurnId", turn},
                   {"input", "see this"},
                   {"attachments", json::array({{{"nodeId", first_node}}})}})
                .type,
            "command.ack");

  EXPECT_EQ(h.path(thread).size(), nodes) << "steers never move the leaf before the cutoff";
  ASSERT_TRUE(h.provider.release());
  h.wait_complete(thread, 1);
  EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"once", "see this"}));
  EXPECT_EQ(h.path(thread)[nodes + 2].body["attachments"], json::array({{{"nodeId", first_node}}}));
  h.request("turn.interrupt", {{"threadId", other}});
}

TEST(SteeringTest, ASteerWhoseTransactionFailsIsNeverAckedAndItsRetryIsAdmittedOnce) {
  FailPoints fail_points;
  testing::HarnessOptions options;
  options.fail_points = &fail_points;
  EngineHarness h(options);
  h.start();
  const std::string thread = h.create_thread();
  const std::string turn =
      start_held_turn(h, thread, ScriptedResponse::text("held"), {ScriptedResponse::text("done")});
  const json params = {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "durable or nothing"}};
  fail_points.arm("receipts.insert", FailPoints::Action::kError);
  AgentEvent failed = h.request_as("flaky", "turn.steer", params);
  EXPECT_EQ(failed.type, "command.rejected");
  EXPECT_EQ(error_code(failed), codes::kFailPoint);
  AgentEvent retried = h.request_as("flaky", "turn.steer", params);
  ASSERT_EQ(retried.type, "command.ack") << retried.payload.dump();
  EXPECT_EQ(retried.payload["replayed"], false) << "the failed attempt left no receipt";
  EXPECT_EQ(retried.payload["result"]["admissionSeq"], 1) << "the failed attempt left no steer";
  ASSERT_TRUE(h.provider.release());
  h.wait_complete(thread, 1);
  EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"durable or nothing"}));
}

TEST(SteeringTest, AnInterruptMaterializesAckedSteersBeforeTheTurnEnds) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  const std::string turn = start_held_turn(h, thread, ScriptedResponse::text("never arrives"));
  ASSERT_EQ(h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "kept"}}).type,
            "command.ack");
  h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  EXPECT_EQ(h.kinds(thread),
            (std::vector<std::string>{"turn_context", "user_message", "user_message", "notice"}));
  EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"kept"}));
}

// Spec §5.1 / issue 14 point 5: an interrupt's ACK means the interrupted state is committed, so a process
// killed right after the ACK does not take the turn up again. The answer comes after the run.updated and
// turn.complete that report the commit, and when it is delivered the store already says interrupted.
TEST(SteeringTest, AnInterruptIsAnsweredOnlyAfterTheInterruptedStateIsCommitted) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::held(ScriptedResponse::text("never arrives")));
  AgentEvent submitted = h.request("turn.submit", {{"threadId", thread}, {"input", "go"}});
  ASSERT_EQ(submitted.type, "command.ack");
  ASSERT_TRUE(h.provider.wait_held(1));
  const std::string run_id = submitted.payload["result"]["runId"];
  // The state the store holds when the answer is delivered (this subscriber has its own delivery thread).
  std::mutex mu;
  std::condition_variable read;
  std::optional<std::string> stored_at_answer;
  auto watch = h.transport->on_event([&](const AgentEvent& event) {
    if (event.type != "command.ack" || event.payload.value("method", "") != "turn.interrupt") return;
    RunRepository runs(h.clock);
    std::string state = "unreadable";
    if (auto tx = h.store().begin(TxMode::kRead)) {
      if (auto run = runs.get(**tx, run_id)) state = to_string(run->state);
    }
    {
      std::lock_guard<std::mutex> guard(mu);
      stored_at_answer = state;
    }
    read.notify_all();
  });
  AgentEvent answer = h.request("turn.interrupt", {{"threadId", thread}});
  ASSERT_EQ(answer.type, "command.ack") << answer.payload.dump();
  EXPECT_EQ(answer.payload["result"]["interrupted"], true);
  EXPECT_EQ(answer.payload["result"]["turnId"], submitted.payload["result"]["turnId"]);
  EXPECT_EQ(answer.payload["result"]["state"], "interrupted");
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(read.wait_for(lock, std::chrono::seconds(30), [&] { return stored_at_answer.has_value(); }));
    EXPECT_EQ(*stored_at_answer, "interrupted") << "ACKed before the interrupted state was durable";
  }
  // Events of one thread arrive in publication order: the answer follows the commit's events.
  std::optional<uint64_t> committed_seq;
  for (const AgentEvent& event : h.log.events()) {
    if (event.thread_id != thread) continue;
    if (event.type == "run.updated" && event.payload.value("state", "") == "interrupted")
      committed_seq = event.seq;
  }
  ASSERT_TRUE(committed_seq.has_value());
  EXPECT_GT(answer.seq, *committed_seq) << "the interrupt was answered before its state was committed";
  EXPECT_GT(answer.seq, h.wait_complete(thread, 1).seq);
}

// Issue 14 point 6a: the interrupt closes the turn's gate when it is decided, not when the runner later
// sees it. The thread's strand is held in a write (an enqueue sent right after the interrupt) so the runner
// cannot run, and the steer is decided in that window; every write waits at the store's gate until both
// are decided.
TEST(SteeringTest, ASteerDecidedAfterTheInterruptIsRefusedWithTurnEndedEvenBeforeTheRunnerSeesIt) {
  testing::WriteGate writes;
  testing::HarnessOptions options;
  options.write_gate = &writes;
  EngineHarness h(options);
  h.start();
  const std::string thread = h.create_thread();
  const std::string turn = start_held_turn(h, thread, ScriptedResponse::text("never arrives"));
  writes.pause();
  h.send("turn.interrupt", {{"threadId", thread}});
  h.send("turn.enqueue", {{"threadId", thread}, {"input", "queued meanwhile"}});
  ASSERT_TRUE(writes.wait_held(1)) << "the enqueue's write holds the strand: the interrupt was decided";
  h.transport->send(Op{"turn.steer",
                       "test-client",
                       "late-steer",
                       {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "late"}}});
  ASSERT_TRUE(writes.wait_held(2)) << "the steer was decided and waits for its transaction";
  writes.resume();
  AgentEvent steer;
  ASSERT_TRUE(h.log.wait_until([&](const std::vector<AgentEvent>& events) {
    for (const AgentEvent& e : events) {
      if ((e.type == "command.ack" || e.type == "command.rejected") &&
          e.payload.value("submissionId", "") == "late-steer") {
        steer = e;
        return true;
      }
    }
    return false;
  }));
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "interrupted");
  ASSERT_EQ(steer.type, "command.rejected")
      << "a steer was admitted after the interrupt: " << steer.payload.dump();
  EXPECT_EQ(error_code(steer), codes::kTurnEnded);
  EXPECT_NE(steer.payload["error"]["message"].get<std::string>().find("interrupted"), std::string::npos);
  EXPECT_TRUE(steered_texts(h, thread).empty());
  EXPECT_EQ(h.log.of_type("turn.start").size(), 1u) << "after an interrupt the queue holds";
}

// Issue 14 point 6b / spec §3: a successful steer triggers one more request whatever the final reply's stop
// reason; a reply cut short (max_tokens, content_filter) is no exception.
TEST(SteeringTest, ASteerWhileACutShortFinalReplyStreamsIsAnsweredByOneMoreRequest) {
  for (auto [reason, raw] : {std::pair{StopReason::kMaxTokens, "length"},
                             std::pair{StopReason::kContentFilter, "content_filter"}}) {
    SCOPED_TRACE(raw);
    EngineHarness h;
    h.start();
    const std::string thread = h.create_thread();
    ScriptedResponse cut;
    cut.add(provider_event::TextDelta{"partial"}).add(provider_event::Finish{reason, raw});
    const std::string turn =
        start_held_turn(h, thread, std::move(cut), {ScriptedResponse::text("answering the steer")});
    ASSERT_EQ(
        h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "one more thing"}})
            .type,
        "command.ack");
    ASSERT_TRUE(h.provider.release());
    EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "end");
    EXPECT_EQ(h.kinds(thread), (std::vector<std::string>{"turn_context", "user_message", "assistant_message",
                                                         "user_message", "assistant_message"}));
    auto requests = h.provider.requests();
    ASSERT_EQ(requests.size(), 2u) << "the steer was never answered";
    EXPECT_EQ(requests[1].messages.back().content[0].text, "one more thing");
    EXPECT_EQ(h.log.of_type("turn.complete").size(), 1u);
  }
}

TEST(SteeringTest, AProviderErrorMaterializesAckedSteersBeforeTheTurnFails) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  const std::string turn = start_held_turn(
      h, thread, ScriptedResponse::failure(Error("provider.http_500", "the model server failed")));
  ASSERT_EQ(h.request("turn.steer", {{"threadId", thread}, {"expectedTurnId", turn}, {"input", "kept"}}).type,
            "command.ack");
  ASSERT_TRUE(h.provider.release());
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "error");
  EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"kept"}));
}

TEST(SteeringTest, PendingSteersOfAStoredRunEnterItsFirstRequestWithoutAnyInMemoryState) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::tool_calls({{"c1", "echo", R"({"text":"a"})"}}).with_usage(10, 10));
  AgentEvent submitted =
      h.request("turn.submit", {{"threadId", thread}, {"input", "go"}, {"budgetTokens", 5}});
  EXPECT_EQ(h.wait_complete(thread, 1).payload["stopReason"], "budget_pause");
  // A run left with a pending steer in the store, as a crash would leave it: admitted directly, so no
  // actor knows about it.
  const std::string run_id = submitted.payload["result"]["runId"];
  {
    RunRepository runs(h.clock);
    auto tx = h.store().begin(TxMode::kWrite);
    ASSERT_TRUE(tx);
    ASSERT_TRUE(runs.transition(**tx, run_id, std::nullopt, RunState::kStreamingModel));
    ASSERT_TRUE(runs.admit_steer(**tx, run_id, "stored-steer",
                                 json::array({{{"type", "text"}, {"text", "from the store"}}})));
    ASSERT_TRUE(runs.transition(**tx, run_id, std::nullopt, RunState::kBudgetPaused));
    ASSERT_TRUE((*tx)->commit());
  }
  h.provider.push(ScriptedResponse::text("read it"));
  ASSERT_EQ(
      h.request("run.resume", {{"threadId", thread}, {"runId", run_id}, {"additionalBudgetTokens", 1000}})
          .type,
      "command.ack");
  h.wait_complete(thread, 2);
  auto requests = h.provider.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].messages.back().content[0].text, "from the store");
  EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"from the store"}));
}

TEST(SteeringTest, AfterANormalEndTheNextQueuedInputStartsAtOnce) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  start_held_turn(h, thread, ScriptedResponse::text("first turn"), {ScriptedResponse::text("second turn")});
  AgentEvent queued = h.request("turn.enqueue", {{"threadId", thread}, {"input", "next please"}});
  ASSERT_EQ(queued.type, "command.ack") << queued.payload.dump();
  EXPECT_TRUE(h.log.wait_count("queue.updated", 1));
  ASSERT_TRUE(h.provider.release());
  EXPECT_EQ(h.wait_complete(thread, 2).payload["stopReason"], "end");
  auto users = std::vector<std::string>{};
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind == NodeKind::kUserMessage) users.push_back(node.body["content"][0]["text"]);
  }
  EXPECT_EQ(users, (std::vector<std::string>{"go", "next please"}));
  auto updates = h.log.of_type("queue.updated");
  ASSERT_GE(updates.size(), 2u);
  EXPECT_TRUE(updates.back().payload["items"].empty()) << "the queue announced that it was taken";
}

TEST(SteeringTest, AnInputEnqueuedOnAnIdleThreadWhoseLastTurnEndedNormallyRunsAtOnce) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::text("first"));
  h.provider.push(ScriptedResponse::text("second"));
  h.run_turn(thread, "go");
  ASSERT_EQ(h.request("turn.enqueue", {{"threadId", thread}, {"input", "late but not lost"}}).type,
            "command.ack");
  EXPECT_EQ(h.wait_complete(thread, 2).payload["stopReason"], "end");
  EXPECT_EQ(h.path(thread).back().kind, NodeKind::kAssistantMessage);
  EXPECT_EQ(h.log.of_type("turn.start").size(), 2u);
}

TEST(SteeringTest, AfterAnInterruptTheQueueHoldsUntilTheUserStartsIt) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  start_held_turn(h, thread, ScriptedResponse::text("never"));
  ASSERT_EQ(h.request("turn.enqueue", {{"threadId", thread}, {"input", "queued"}}).type, "command.ack");
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 1);
  EXPECT_EQ(h.log.of_type("turn.start").size(), 1u) << "no queued turn starts after an interrupt";
  h.provider.push(ScriptedResponse::text("now"));
  AgentEvent started = h.request("queue.start", {{"threadId", thread}});
  ASSERT_EQ(started.type, "command.ack") << started.payload.dump();
  EXPECT_EQ(h.wait_complete(thread, 2).payload["stopReason"], "end");
  EXPECT_EQ(error_code(h.request("queue.start", {{"threadId", thread}})), codes::kQueueEmpty);
}

TEST(SteeringTest, TheQueueHoldsEightAndRefusesTheNinthAndBadInput) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  start_held_turn(h, thread, ScriptedResponse::text("held"));
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(h.request("turn.enqueue", {{"threadId", thread}, {"input", "q" + std::to_string(i)}}).type,
              "command.ack");
  }
  EXPECT_EQ(error_code(h.request("turn.enqueue", {{"threadId", thread}, {"input", "ninth"}})),
            codes::kQueueFull);
  EXPECT_EQ(error_code(h.request("turn.enqueue", {{"threadId", thread}, {"input", ""}})),
            codes::kInputInvalid);
  EXPECT_EQ(error_code(h.request("turn.enqueue", {{"threadId", thread}, {"input", 7}})),
            codes::kInputInvalid);
  h.request("turn.interrupt", {{"threadId", thread}});
  h.wait_complete(thread, 1);
}

TEST(SteeringTest, InterruptingAnIdleThreadIsAnsweredAndChangesNothing) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  AgentEvent answer = h.request("turn.interrupt", {{"threadId", thread}});
  EXPECT_EQ(answer.type, "command.ack");
  EXPECT_EQ(answer.payload["result"]["interrupted"], false);
  EXPECT_TRUE(h.path(thread).empty());
}

#ifdef KEEL_FAILPOINTS_ENABLED
// The instant between "the turn is over" and turn.complete, held open with the turn.complete.before hold
// (keel/fail_points.h): an input sent then is queued with the reason, and runs as the next turn.
TEST(SteeringTest, AnInputWhileTheEndedTurnHoldsBeforeTurnCompleteIsQueuedWithWhyAndRunsNext) {
  FailPoints fail_points;
  testing::HarnessOptions options;
  options.fail_points = &fail_points;
  EngineHarness h(options);
  const std::string fifo = h.dir.file("release");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fail_points.arm("turn.complete.before", FailPoints::Action::kHold, 1, false, fifo);
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::text("first answer"));
  h.provider.push(ScriptedResponse::text("answer to the late one"));
  AgentEvent started = h.request("turn.input", {{"threadId", thread}, {"input", "hello"}});
  ASSERT_EQ(started.type, "command.ack") << started.payload.dump();
  // Opening the FIFO for writing returns once the hold has opened it: the turn holds at the point.
  const int release = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(release, 0);
  AgentEvent late = h.request("turn.input", {{"threadId", thread}, {"input", "one more thing"}});
  ASSERT_EQ(late.type, "command.ack") << late.payload.dump();
  EXPECT_EQ(late.payload["result"]["action"], "enqueued");
  EXPECT_EQ(late.payload["result"]["reason"], "the turn is ending; the input runs next");
  EXPECT_TRUE(h.log.of_type("turn.complete").empty()) << "the first turn holds before turn.complete";
  ASSERT_EQ(::write(release, "x", 1), 1);
  ::close(release);
  EXPECT_EQ(h.wait_complete(thread, 2).payload["stopReason"], "end");
  std::vector<std::string> users;
  for (const NodeRecord& node : h.path(thread)) {
    if (node.kind == NodeKind::kUserMessage) users.push_back(node.body["content"][0]["text"]);
  }
  EXPECT_EQ(users, (std::vector<std::string>{"hello", "one more thing"}));
  EXPECT_TRUE(steered_texts(h, thread).empty());
  EXPECT_EQ(h.path(thread).back().body["content"][0]["text"], "answer to the late one");
  EXPECT_EQ(fail_points.hits("turn.complete.before"), 2u);
}

// The other late steer: routed as a steer while the turn still admitted, but decided only after the turn
// stopped admitting (holds before the stop, before the decision, and before turn.complete). It is refused
// with turn.ended, and the client's resend, still before turn.complete, is queued and runs next.
TEST(SteeringTest, ASteerDecidedAfterTheTurnStoppedIsRefusedAndItsResendIsQueuedAndRunsNext) {
  FailPoints fail_points;
  testing::HarnessOptions options;
  options.fail_points = &fail_points;
  EngineHarness h(options);
  const std::string before_close = h.dir.file("before-close");
  const std::string before_decide = h.dir.file("before-decide");
  const std::string before_complete = h.dir.file("before-complete");
  for (const std::string& fifo : {before_close, before_decide, before_complete}) {
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << fifo;
  }
  fail_points.arm("turn.steers.before_close", FailPoints::Action::kHold, 1, false, before_close);
  fail_points.arm("steer.admission.before_decide", FailPoints::Action::kHold, 1, false, before_decide);
  fail_points.arm("turn.complete.before", FailPoints::Action::kHold, 1, false, before_complete);
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::text("first answer"));
  h.provider.push(ScriptedResponse::text("answer to the late one"));
  ASSERT_EQ(h.request("turn.input", {{"threadId", thread}, {"input", "hello"}}).type, "command.ack");
  // Each open returns once its hold has started.
  const int turn_holds = ::open(before_close.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(turn_holds, 0);
  h.send("turn.input", {{"threadId", thread}, {"input", "one more thing"}});
  const int steer_holds = ::open(before_decide.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(steer_holds, 0);
  ASSERT_EQ(::write(turn_holds, "x", 1), 1);
  ::close(turn_holds);
  const int end_holds = ::open(before_complete.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(end_holds, 0);
  ASSERT_EQ(::write(steer_holds, "x", 1), 1);
  ::close(steer_holds);
  ASSERT_TRUE(h.log.wait_count("command.rejected", 1));
  const AgentEvent refused = h.log.of_type("command.rejected").front();
  EXPECT_EQ(error_code(refused), codes::kTurnEnded) << refused.payload.dump();
  AgentEvent resent = h.request("turn.input", {{"threadId", thread}, {"input", "one more thing"}});
  ASSERT_EQ(resent.type, "command.ack") << resent.payload.dump();
  EXPECT_EQ(resent.payload["result"]["action"], "enqueued");
  EXPECT_EQ(resent.payload["result"]["reason"], "the turn is ending; the input runs next");
  EXPECT_TRUE(h.log.of_type("turn.complete").empty());
  ASSERT_EQ(::write(end_holds, "x", 1), 1);
  ::close(end_holds);
  EXPECT_EQ(h.wait_complete(thread, 2).payload["stopReason"], "end");
  EXPECT_TRUE(steered_texts(h, thread).empty());
  EXPECT_EQ(h.path(thread).back().body["content"][0]["text"], "answer to the late one");
}
#endif  // KEEL_FAILPOINTS_ENABLED

TEST(SteeringTest, TurnInputStartsSteersOrEnqueuesAsTheThreadAllows) {
  EngineHarness h;
  h.start();
  const std::string thread = h.create_thread();
  h.provider.push(ScriptedResponse::held(ScriptedResponse::text("first")));
  h.provider.push(ScriptedResponse::text("answering the steer"));
  AgentEvent started = h.request("turn.input", {{"threadId", thread}, {"input", "hello"}});
  ASSERT_EQ(started.type, "command.ack") << started.payload.dump();
  EXPECT_EQ(started.payload["result"]["action"], "started");
  ASSERT_TRUE(h.provider.wait_held(1));
  AgentEvent steered = h.request("turn.input", {{"threadId", thread}, {"input", "and also"}});
  ASSERT_EQ(steered.type, "command.ack") << steered.payload.dump();
  EXPECT_EQ(steered.payload["result"]["action"], "steered");
  EXPECT_EQ(steered.payload["result"]["turnId"], started.payload["result"]["turnId"]);
  ASSERT_TRUE(h.provider.release());
  h.wait_complete(thread, 1);
  EXPECT_EQ(steered_texts(h, thread), (std::vector<std::string>{"and also"}));
  // A retried submission replays what happened, whatever the thread's state is now.
  AgentEvent replay = h.request_as(steered.payload["submissionId"], "turn.input",
                                   {{"threadId", thread}, {"input", "and also"}});
  EXPECT_EQ(replay.payload["result"]["action"], "steered");
  EXPECT_EQ(replay.payload["replayed"], true);
}

}  // namespace
}  // namespace keel
