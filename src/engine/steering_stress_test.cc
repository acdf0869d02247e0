// A seeded stress test of spec §3: hundreds of steers, enqueues, turn.inputs, queue starts and interrupts,
// chosen at random, interleaved with model responses and tools that finish on the engine's timers, on
// several threads at once. After the run it checks, per thread:
//   - every ACKed steer is in the history exactly once, in admission order within its run, and no steer
//     that was not ACKed is;
//   - no user message sits between a tool_call and its tool_result, and every tool_call has a result;
//   - every ACKed enqueue ran as a turn exactly once or is still queued, and the queue never held more
//     than 8.
// The op sequence comes from the seed it prints; KEEL_STRESS_SEED=<n> replays it (thread timing varies,
// the invariants must hold for every timing).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_harness.h"
#include "store/queue_repository.h"

namespace keel {
namespace {

using nlohmann::json;
using testing::EngineHarness;
using testing::ScriptedResponse;

// A tool that finishes 0-2 ms later on the engine's scheduler, or at once when the turn is interrupted.
class SlowTool final : public AgentTool {
 public:
  SlowTool(Scheduler& scheduler, uint64_t seed) : scheduler_(scheduler), rng_(seed) {
    spec_ = testing::simple_spec("slow");
  }
  const ToolSpec& spec() const override { return spec_; }
  void execute(ToolCallContext context, json, std::function<void(Result<ToolResult>)> done) override {
    auto call = std::make_shared<Call>();
    call->done = std::move(done);
    std::weak_ptr<Call> weak = call;
    auto finish = [weak](Result<ToolResult> result) {
      auto c = weak.lock();
      if (!c) return;
      std::function<void(Result<ToolResult>)> report;
      std::unique_ptr<ScheduledTask> task;
      {
        std::lock_guard<std::mutex> guard(c->mu);
        report = std::move(c->done);
        task = std::move(c->task);  // destroying a task from its own callback is allowed
      }
      if (report) report(std::move(result));
    };
    int delay_ms = 0;
    {
      std::lock_guard<std::mutex> guard(mu_);
      delay_ms = static_cast<int>(rng_() % 3);
      calls_.push_back(call);
    }
    call->registration =
        context.cancel.on_cancel([finish] { finish(fail(codes::kCancelled, "interrupted")); });
    auto task = scheduler_.schedule_after(std::chrono::milliseconds(delay_ms),
                                          [finish] { finish(text_result("slow ok")); });
    std::lock_guard<std::mutex> guard(call->mu);
    if (call->done) call->task = std::move(task);
  }

 private:
  struct Call {
    std::mutex mu;
    std::function<void(Result<ToolResult>)> done;
    std::unique_ptr<ScheduledTask> task;
    CancellationRegistration registration;
  };
  ToolSpec spec_;
  Scheduler& scheduler_;
  std::mutex mu_;
  std::mt19937_64 rng_;
  std::vector<std::shared_ptr<Call>> calls_;
};

uint64_t stress_seed() {
  if (const char* fixed = std::getenv("KEEL_STRESS_SEED")) return std::strtoull(fixed, nullptr, 10);
  return std::random_device{}();
}

struct ThreadTrack {
  std::string id;
  std::string last_turn;                 // from the latest started turn, possibly stale
  std::set<std::string> acked_steers;    // steer ids
  std::set<std::string> enqueued_texts;  // inputs ACKed as queued
  std::set<std::string> started_texts;   // inputs ACKed as a started turn
};

TEST(SteeringStressTest, RandomSteersEnqueuesAndInterruptsKeepEveryGuarantee) {
  const uint64_t seed = stress_seed();
  std::cout << "steering stress seed: " << seed << " (KEEL_STRESS_SEED=" << seed << " replays it)\n";
  std::mt19937_64 rng(seed);
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };

  // Real timers: the slow tool's random delays are the jitter this test is about.
  testing::HarnessOptions options;
  options.real_timers = true;
  EngineHarness h(options);
  // Plenty of responses: half final replies, half one or two slow tool calls.
  for (int i = 0; i < 4000; ++i) {
    if (chance(50)) {
      h.provider.push(ScriptedResponse::text("reply " + std::to_string(i)));
    } else {
      std::vector<ScriptedResponse::Call> calls{{"s" + std::to_string(i), "slow", "{}"}};
      if (chance(30)) calls.push_back({"t" + std::to_string(i), "slow", "{}"});
      h.provider.push(ScriptedResponse::tool_calls(std::move(calls)));
    }
  }
  h.provider.set_recording(false);
  h.start();
  auto slow = std::make_shared<SlowTool>(h.engine->scheduler(), seed);
  ASSERT_TRUE(h.tools.register_tool(slow));

  constexpr int kThreads = 3;
  constexpr int kOps = 1500;
  std::vector<ThreadTrack> tracks(kThreads);
  for (ThreadTrack& t : tracks) t.id = h.create_thread();

  int counter = 0;
  std::map<std::string, int> answers;
  for (int op = 0; op < kOps; ++op) {
    ThreadTrack& t = tracks[rng() % kThreads];
    const std::string text = t.id + "/" + std::to_string(++counter);
    const int pick = static_cast<int>(rng() % 100);
    AgentEvent answer;
    if (pick < 35) {
      answer = h.request("turn.input", {{"threadId", t.id}, {"input", text}});
      if (answer.type == "command.ack") {
        const std::string action = answer.payload["result"]["action"];
        if (action == "steered") {
          t.acked_steers.insert(answer.payload["result"]["steerId"].get<std::string>());
        } else if (action == "enqueued") {
          t.enqueued_texts.insert(text);
        } else {
          t.started_texts.insert(text);
          t.last_turn = answer.payload["result"]["turnId"];
        }
      }
    } else if (pick < 55) {
      answer = h.request("turn.steer", {{"threadId", t.id},
                                        {"expectedTurnId", t.last_turn.empty() ? "none" : t.last_turn},
                                        {"input", text}});
      if (answer.type == "command.ack")
        t.acked_steers.insert(answer.payload["result"]["steerId"].get<std::string>());
    } else if (pick < 70) {
      answer = h.request("turn.enqueue", {{"threadId", t.id}, {"input", text}});
      if (answer.type == "command.ack") t.enqueued_texts.insert(text);
    } else if (pick < 80) {
      answer = h.request("turn.interrupt", {{"threadId", t.id}});
    } else if (pick < 88) {
      answer = h.request("queue.start", {{"threadId", t.id}});
      if (answer.type == "command.ack") t.last_turn = answer.payload["result"]["turnId"];
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
      continue;
    }
    answers[answer.type == "command.ack" ? answer.payload["method"].get<std::string>() + " ack"
                                         : answer.payload["method"].get<std::string>() + " " +
                                               answer.payload["error"]["code"].get<std::string>()]++;
  }

  // Wind down: interrupt until every thread is idle (an interrupt holds the queue).
  for (int round = 0; round < 200; ++round) {
    bool idle = true;
    const size_t completed = testing::EventLog::count_in(h.log.events(), "turn.complete");
    for (ThreadTrack& t : tracks) {
      size_t starts = 0, completes = 0;
      for (const AgentEvent& e : h.log.events()) {
        if (e.thread_id != t.id) continue;
        starts += e.type == "turn.start";
        completes += e.type == "turn.complete";
      }
      if (starts != completes) {
        idle = false;
        h.request("turn.interrupt", {{"threadId", t.id}});
      }
    }
    if (idle) break;
    // A running turn ends after its interrupt; wait for an end rather than for time.
    EXPECT_TRUE(h.log.wait_until([&](const std::vector<AgentEvent>& events) {
      return testing::EventLog::count_in(events, "turn.complete") > completed;
    }));
  }

  std::cout << "answers:";
  for (const auto& [kind, n] : answers) std::cout << " [" << kind << "] " << n;
  std::cout << "\n";

  size_t steers_seen = 0;
  for (ThreadTrack& t : tracks) {
    SCOPED_TRACE("thread " + t.id + ", seed " + std::to_string(seed));
    std::map<std::string, int> steer_count;
    std::map<std::string, int> user_texts;
    std::set<std::string> open_calls;
    const std::vector<NodeRecord> path = h.path(t.id);
    for (const NodeRecord& node : path) {
      switch (node.kind) {
        case NodeKind::kToolCall:
          open_calls.insert(node.body["toolCallId"].get<std::string>());
          break;
        case NodeKind::kToolResult:
          EXPECT_EQ(open_calls.erase(node.body["toolCallId"].get<std::string>()), 1u)
              << "a result without its call";
          break;
        case NodeKind::kUserMessage: {
          EXPECT_TRUE(open_calls.empty())
              << "a user message inside a tool_call/tool_result pair: " << node.id;
          if (node.body.value("steered", false)) {
            const std::string steer_id = node.body["steerId"];
            ++steer_count[steer_id];
          } else {
            ++user_texts[node.body["content"][0]["text"].get<std::string>()];
          }
          break;
        }
        default:
          break;
      }
    }
    EXPECT_TRUE(open_calls.empty()) << open_calls.size() << " tool_calls have no tool_result";
    for (const std::string& id : t.acked_steers) EXPECT_EQ(steer_count[id], 1) << "ACKed steer " << id;
    for (const auto& [id, n] : steer_count)
      EXPECT_TRUE(t.acked_steers.contains(id)) << "steer " << id << " was never ACKed";
    steers_seen += steer_count.size();

    // Admission order: within each run, steered messages follow their admission sequence.
    RunRepository runs(h.clock);
    auto tx = h.store().begin(TxMode::kRead);
    ASSERT_TRUE(tx);
    std::map<std::string, int64_t> last_seq;
    for (const NodeRecord& node : path) {
      if (node.kind != NodeKind::kUserMessage || !node.body.value("steered", false)) continue;
      auto steer = runs.get_steer(**tx, node.body["steerId"].get<std::string>());
      ASSERT_TRUE(steer);
      EXPECT_GT(steer->admission_seq, last_seq[steer->run_id]) << "steers out of admission order";
      last_seq[steer->run_id] = steer->admission_seq;
      EXPECT_EQ(steer->node_id, node.id);
    }

    // Queued inputs: each ran once, or is still in the queue; the queue never held more than 8.
    QueueRepository queue(h.clock);
    auto queued = queue.list(**tx, t.id);
    ASSERT_TRUE(queued);
    EXPECT_LE(queued->size(), 8u);
    std::set<std::string> still_queued;
    for (const QueuedInput& item : *queued) still_queued.insert(item.input.get<std::string>());
    for (const std::string& text : t.enqueued_texts) {
      const int ran = user_texts[text];
      EXPECT_EQ(ran + (still_queued.contains(text) ? 1 : 0), 1) << "queued input " << text;
    }
    for (const std::string& text : t.started_texts)
      EXPECT_EQ(user_texts[text], 1) << "started input " << text;
    for (const AgentEvent& e : h.log.of_type("queue.updated")) {
      if (e.thread_id == t.id && e.payload.contains("items")) {
        EXPECT_LE(e.payload["items"].size(), 8u);
      }
    }
  }
  std::cout << "steers materialized: " << steers_seen << "\n";
  EXPECT_GT(steers_seen, 0u) << "the run should have admitted steers";
}

}  // namespace
}  // namespace keel
