// session_context_bench — buildSessionContext on a 10,000-node thread: the first build (a fresh builder
// reads the whole path) and incremental builds after new nodes were appended (ARCHITECTURE.md §6: the
// cost must follow the new nodes, not the thread; target < 50 µs after one node).
//
// The thread is a realistic mix, 8 nodes per turn: turn_context, user_message, assistant_message with two
// parallel tool calls, tool_call/tool_result interleaved twice, and a final assistant_message; bodies are
// 200-500 bytes. Only build() is timed: the first-build benchmark pauses the timer around everything else;
// the incremental ones time build() alone with a steady clock (UseManualTime), so their "Time" column is
// build()'s wall time while "CPU" also counts the untimed appends; their build_cpu_us counter is build()'s
// own thread CPU time, which a loaded machine does not inflate as much as wall time.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "store/node_body.h"
#include "store/session_context.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;

constexpr int kThreadNodes = 10'000;

[[noreturn]] void die(const Error& error, const char* what) {
  std::fprintf(stderr, "session_context_bench: %s: %s\n", what, error.to_string().c_str());
  std::abort();
}

template <typename T>
T check(Result<T> result, const char* what) {
  if (!result) die(result.error(), what);
  return std::move(result).value();
}
inline void check(Result<void> result, const char* what) {
  if (!result) die(result.error(), what);
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string filler(const std::string& seed, size_t bytes) {
  std::string out;
  out.reserve(bytes);
  static constexpr char kWords[] = "the quick brown fox jumps over the lazy dog while reading page ";
  while (out.size() < bytes) out += kWords;
  out.resize(bytes);
  out.replace(0, std::min(seed.size(), bytes), seed.substr(0, bytes));
  return out;
}

ContentBlock block(ContentBlock::Kind kind, std::string text, json provider_data = nullptr) {
  ContentBlock b;
  b.kind = kind;
  b.text = std::move(text);
  b.provider_data = std::move(provider_data);
  return b;
}
ContentBlock text(std::string t) { return block(ContentBlock::Kind::kText, std::move(t)); }

// A thread of the benchmark's shape in its own database.
class BenchThread {
 public:
  BenchThread() {
    store_ = check(open_sqlite_store(
                       SqliteStoreOptions{.path = dir_.file("bench.db"), .synchronous = Synchronous::kOff}),
                   "open");
    auto tx = check(store_->begin(TxMode::kWrite), "begin");
    check(repo_.create(*tx, "thread", "bench"), "create");
    check(tx->commit(), "commit");
  }

  // Appends whole turns until the thread has at least `nodes` more nodes, in batches of transactions.
  void grow(int nodes) {
    int written = 0;
    while (written < nodes) {
      auto tx = check(store_->begin(TxMode::kWrite), "begin");
      for (int i = 0; i < 64 && written < nodes; ++i) written += append_turn(*tx);
      check(tx->commit(), "commit");
    }
  }

  // One node per call, cycling through a turn's shape; each in its own committed transaction.
  void append_one() {
    auto tx = check(store_->begin(TxMode::kWrite), "begin");
    const int k = step_in_turn_++ % 8;
    switch (k) {
      case 0:
        add(*tx, NodeKind::kTurnContext, turn_context());
        break;
      case 1:
        add(*tx, NodeKind::kUserMessage, user());
        break;
      case 2:
        owner_ = add(*tx, NodeKind::kAssistantMessage, assistant(true));
        break;
      case 3:
        add(*tx, NodeKind::kToolCall, call("a"));
        break;
      case 4:
        add(*tx, NodeKind::kToolResult, result("a"));
        break;
      case 5:
        add(*tx, NodeKind::kToolCall, call("b"));
        break;
      case 6:
        add(*tx, NodeKind::kToolResult, result("b"));
        break;
      default:
        add(*tx, NodeKind::kAssistantMessage, assistant(false));
        break;
    }
    check(tx->commit(), "commit");
  }

  // One model step: an assistant message with two parallel calls and their results (5 nodes).
  void append_step() {
    auto tx = check(store_->begin(TxMode::kWrite), "begin");
    owner_ = add(*tx, NodeKind::kAssistantMessage, assistant(true));
    add(*tx, NodeKind::kToolCall, call("a"));
    add(*tx, NodeKind::kToolResult, result("a"));
    add(*tx, NodeKind::kToolCall, call("b"));
    add(*tx, NodeKind::kToolResult, result("b"));
    check(tx->commit(), "commit");
  }

  Store& store() { return *store_; }
  ThreadRepository& repo() { return repo_; }
  const std::string& leaf() const { return leaf_; }

 private:
  int append_turn(Transaction& tx) {
    add(tx, NodeKind::kTurnContext, turn_context());
    add(tx, NodeKind::kUserMessage, user());
    owner_ = add(tx, NodeKind::kAssistantMessage, assistant(true));
    add(tx, NodeKind::kToolCall, call("a"));
    add(tx, NodeKind::kToolResult, result("a"));
    add(tx, NodeKind::kToolCall, call("b"));
    add(tx, NodeKind::kToolResult, result("b"));
    add(tx, NodeKind::kAssistantMessage, assistant(false));
    return 8;
  }

  std::string add(Transaction& tx, NodeKind kind, json body) {
    char id[40];
    std::snprintf(id, sizeof id, "0190a1b2-c3d4-7e5f-8a6b-%012d", ++seq_);
    NewNode node;
    node.id = id;
    node.thread_id = "thread";
    node.kind = kind;
    node.body = std::move(body);
    node.run_id = "0190a1b2-c3d4-7e5f-8a6b-run000000001";
    check(repo_.append(tx, std::move(node)), "append");
    leaf_ = id;
    return leaf_;
  }

  json turn_context() {
    return json{{"model", "gpt-4.1-mini"},
                {"temperature", 0.2},
                {"tools", json::array({"read_page", "search", "click", "type_text"})},
                {"environmentSnapshotId", "0190a1b2-c3d4-7e5f-8a6b-snap00000001"},
                {"note", filler("turn " + std::to_string(seq_), 80)}};
  }
  json user() {
    return check(encode_user_message({.content = {text(filler("question " + std::to_string(seq_), 260))}}),
                 "encode");
  }
  json assistant(bool tool_use) {
    std::vector<ContentBlock> content;
    if (tool_use) {
      content.push_back(
          block(ContentBlock::Kind::kReasoning, filler("plan", 120), {{"signature", filler("sig", 60)}}));
    }
    content.push_back(text(filler("answer " + std::to_string(seq_), tool_use ? 80 : 320)));
    return check(encode_assistant_message(
                     {.content = std::move(content),
                      .stop_reason = tool_use ? AssistantStopReason::kToolUse : AssistantStopReason::kEnd,
                      .provider_stop_reason = tool_use ? "tool_calls" : "stop",
                      .usage = json{{"inputTokens", 1200}, {"outputTokens", 80}}}),
                 "encode");
  }
  json call(const char* which) {
    return check(
        encode_tool_call({.tool_call_id = "call_" + std::to_string(seq_) + which,
                          .name = "read_page",
                          .arguments = {{"url", "https://example.com/docs/page/" + std::to_string(seq_)},
                                        {"selector", "main article"},
                                        {"maxChars", 4000},
                                        {"why", filler("because", 100)}},
                          .assistant_node_id = owner_}),
        "encode");
  }
  json result(const char* which) {
    return check(encode_tool_result({.tool_call_id = "call_" + std::to_string(seq_ - 1) + which,
                                     .content = {text(filler("page text " + std::to_string(seq_), 300))},
                                     .is_error = false,
                                     .details = {{"status", 200}, {"bytes", 48213}, {"ms", 130}}}),
                 "encode");
  }

  testing::TempDir dir_;
  testing::ManualClock clock_;
  ThreadRepository repo_{clock_};
  std::unique_ptr<Store> store_;
  std::string leaf_;
  std::string owner_;
  int seq_ = 0;
  int step_in_turn_ = 0;
};

void BM_FirstBuild(benchmark::State& state) {
  BenchThread thread;
  thread.grow(kThreadNodes);
  auto tx = check(thread.store().begin(TxMode::kRead), "begin");
  size_t messages = 0;
  for (auto _ : state) {
    SessionContextBuilder builder;
    auto built = builder.build(*tx, thread.leaf());
    if (!built) die(built.error(), "build");
    messages = built->size();
    benchmark::DoNotOptimize(built);
    state.PauseTiming();  // the builder's destruction is not part of a build
    builder.invalidate();
    state.ResumeTiming();
  }
  state.counters["nodes"] = kThreadNodes;
  state.counters["messages"] = static_cast<double>(messages);
}
BENCHMARK(BM_FirstBuild)->Unit(benchmark::kMillisecond);

// For comparison: what a builder without a cache costs through ThreadRepository::path_to alone.
void BM_PathToBaseline(benchmark::State& state) {
  BenchThread thread;
  thread.grow(kThreadNodes);
  auto tx = check(thread.store().begin(TxMode::kRead), "begin");
  for (auto _ : state) {
    auto path = thread.repo().path_to(*tx, thread.leaf());
    if (!path) die(path.error(), "path_to");
    benchmark::DoNotOptimize(path);
  }
}
BENCHMARK(BM_PathToBaseline)->Unit(benchmark::kMillisecond);

// One new node per iteration (cycling through a turn's kinds), then build().
void BM_IncrementalBuildOneNode(benchmark::State& state) {
  BenchThread thread;
  thread.grow(kThreadNodes);
  SessionContextBuilder builder;
  {
    auto tx = check(thread.store().begin(TxMode::kRead), "begin");
    check(builder.build(*tx, thread.leaf()), "build");
  }
  size_t read = 0;
  double cpu = 0;
  for (auto _ : state) {
    thread.append_one();
    auto tx = check(thread.store().begin(TxMode::kRead), "begin");
    const double cpu_start = thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    auto built = builder.build(*tx, thread.leaf());
    const auto stop = std::chrono::steady_clock::now();
    cpu += thread_cpu_seconds() - cpu_start;
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
    if (!built) die(built.error(), "build");
    read += builder.nodes_read();
  }
  state.counters["nodes_read_per_build"] =
      benchmark::Counter(static_cast<double>(read), benchmark::Counter::kAvgIterations);
  state.counters["build_cpu_us"] = benchmark::Counter(cpu * 1e6, benchmark::Counter::kAvgIterations);
  state.counters["path_nodes"] = static_cast<double>(builder.cached_nodes());
}
BENCHMARK(BM_IncrementalBuildOneNode)->Unit(benchmark::kMicrosecond)->Iterations(20'000)->UseManualTime();

// One model step per iteration (assistant + 2 calls + 2 results = 5 nodes), then build().
void BM_IncrementalBuildOneStep(benchmark::State& state) {
  BenchThread thread;
  thread.grow(kThreadNodes);
  SessionContextBuilder builder;
  {
    auto tx = check(thread.store().begin(TxMode::kRead), "begin");
    check(builder.build(*tx, thread.leaf()), "build");
  }
  size_t read = 0;
  double cpu = 0;
  for (auto _ : state) {
    thread.append_step();
    auto tx = check(thread.store().begin(TxMode::kRead), "begin");
    const double cpu_start = thread_cpu_seconds();
    const auto start = std::chrono::steady_clock::now();
    auto built = builder.build(*tx, thread.leaf());
    const auto stop = std::chrono::steady_clock::now();
    cpu += thread_cpu_seconds() - cpu_start;
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
    if (!built) die(built.error(), "build");
    read += builder.nodes_read();
  }
  state.counters["nodes_read_per_build"] =
      benchmark::Counter(static_cast<double>(read), benchmark::Counter::kAvgIterations);
  state.counters["build_cpu_us"] = benchmark::Counter(cpu * 1e6, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_IncrementalBuildOneStep)->Unit(benchmark::kMicrosecond)->Iterations(5'000)->UseManualTime();

// Nothing new: the floor of a build (one hash lookup, no read).
void BM_RebuildSameLeaf(benchmark::State& state) {
  BenchThread thread;
  thread.grow(kThreadNodes);
  SessionContextBuilder builder;
  auto tx = check(thread.store().begin(TxMode::kRead), "begin");
  check(builder.build(*tx, thread.leaf()), "build");
  for (auto _ : state) {
    auto built = builder.build(*tx, thread.leaf());
    benchmark::DoNotOptimize(built);
  }
}
BENCHMARK(BM_RebuildSameLeaf)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
