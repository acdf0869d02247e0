// node_digest_bench — what the node digest (store/node_digest.h, issue 15 point 11) costs next to the
// store operations that pay it.
//
//   BM_NodeDigest/<body bytes>   one node_digest(): framing the row and SHA-256 over it;
//   BM_AppendNode/<body bytes>   one append (digest computed) in its own write transaction, synchronous=OFF
//                                so the sync does not hide the CPU cost;
//   BM_ReadNode/<body bytes>     one get_node (digest verified) in a read transaction.
// The digest's share of an append or a read is BM_NodeDigest's time over theirs at the same body size.
//
//   build/bench/node_digest_bench [--benchmark_format=json]
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "store/node_digest.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

std::string text_of(size_t bytes) {
  std::string text;
  while (text.size() < bytes) text += "lorem ipsum dolor sit amet ";
  text.resize(bytes);
  return text;
}

NewNode notice(std::string id, size_t bytes) {
  NewNode node;
  node.id = std::move(id);
  node.thread_id = "thread";
  node.kind = NodeKind::kNotice;
  node.body = nlohmann::json{{"text", text_of(bytes)}, {"forModel", false}};
  return node;
}

void BM_NodeDigest(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  const std::vector<SqlValue> values = {"0193a6f0-0000-7000-8000-000000000001",
                                        "thread",
                                        std::nullopt,
                                        "notice",
                                        std::nullopt,
                                        int64_t{42},
                                        text_of(bytes),
                                        int64_t{1700000000000}};
  for (auto _ : state) benchmark::DoNotOptimize(node_digest(values));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_NodeDigest)->Arg(256)->Arg(4096)->Arg(65536)->Arg(1 << 20);

struct Fixture {
  testing::TempDir dir;
  testing::ManualClock clock;
  ThreadRepository threads{clock};
  std::unique_ptr<Store> store;

  bool open(benchmark::State& state) {
    auto opened =
        open_sqlite_store(SqliteStoreOptions{.path = dir.file("bench.db"), .synchronous = Synchronous::kOff});
    if (!opened) {
      state.SkipWithError(opened.error().to_string().c_str());
      return false;
    }
    store = std::move(*opened);
    auto tx = store->begin(TxMode::kWrite).value();
    if (!threads.create(*tx, "thread", "bench") || !tx->commit()) {
      state.SkipWithError("cannot create the thread");
      return false;
    }
    return true;
  }
};

void BM_AppendNode(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  Fixture fixture;
  if (!fixture.open(state)) return;
  int64_t n = 0;
  for (auto _ : state) {
    auto tx = fixture.store->begin(TxMode::kWrite).value();
    auto appended = fixture.threads.append(*tx, notice("node-" + std::to_string(n++), bytes));
    if (!appended || !tx->commit()) {
      state.SkipWithError("append failed");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_AppendNode)->Arg(256)->Arg(4096)->Arg(65536)->Arg(1 << 20);

void BM_ReadNode(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  Fixture fixture;
  if (!fixture.open(state)) return;
  {
    auto tx = fixture.store->begin(TxMode::kWrite).value();
    if (!fixture.threads.append(*tx, notice("node", bytes)) || !tx->commit()) {
      state.SkipWithError("append failed");
      return;
    }
  }
  for (auto _ : state) {
    auto tx = fixture.store->begin(TxMode::kRead).value();
    auto node = fixture.threads.get_node(*tx, "node");
    if (!node) {
      state.SkipWithError(node.error().to_string().c_str());
      return;
    }
    benchmark::DoNotOptimize(node);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_ReadNode)->Arg(256)->Arg(4096)->Arg(65536)->Arg(1 << 20);

}  // namespace
}  // namespace keel

BENCHMARK_MAIN();
