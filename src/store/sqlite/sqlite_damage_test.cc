// The bit-flip experiment (issue 15 point 11): stores whose file took random bit flips must never serve
// changed node data. Each damaged store either refuses to open (PRAGMA quick_check, or a header SQLite
// refuses), reports an error on the read that meets the damage (store.corrupt from a node digest, or any
// other coded error), or serves every node byte-identical to what was written.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "keel/sqlite_store.h"
#include "keel/store.h"
#include "store/schema.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

struct WrittenNode {
  std::string thread_id;
  std::optional<std::string> parent_id;
  NodeKind kind = NodeKind::kNotice;
  int64_t seq = 0;
  json body;
};

// Words of random lengths, so that bodies differ in size and content from store to store.
std::string random_text(std::mt19937_64& rng, size_t bytes) {
  static constexpr std::string_view kLetters = "abcdefghijklmnopqrstuvwxyz";
  std::string text;
  while (text.size() < bytes) {
    if (!text.empty()) text += ' ';
    for (uint64_t n = 1 + rng() % 9; n > 0; --n) text += kLetters[rng() % kLetters.size()];
  }
  return text;
}

// Writes three threads of notices and user messages into a new store at `path`; returns what was written.
std::map<std::string, WrittenNode> write_store(const std::string& path, std::mt19937_64& rng) {
  testing::ManualClock clock;
  ThreadRepository threads(clock);
  std::map<std::string, WrittenNode> written;
  auto store = open_sqlite_store(SqliteStoreOptions{.path = path, .synchronous = Synchronous::kOff});
  EXPECT_TRUE(store) << store.error().to_string();
  if (!store) return written;
  for (int t = 0; t < 3; ++t) {
    auto tx = (*store)->begin(TxMode::kWrite).value();
    const std::string thread_id = "thread-" + std::to_string(t);
    EXPECT_TRUE(threads.create(*tx, thread_id, "title " + std::to_string(t)));
    for (int n = 0; n < 15; ++n) {
      NewNode node;
      node.id = thread_id + "-node-" + std::to_string(n);
      node.thread_id = thread_id;
      const std::string text = random_text(rng, 50 + rng() % 1500);
      if (n % 2 == 0) {
        node.kind = NodeKind::kNotice;
        node.body = json{{"text", text}, {"forModel", n % 4 == 0}};
      } else {
        node.kind = NodeKind::kUserMessage;
        node.body =
            json{{"content", json::array({json{{"type", "text"}, {"text", text}}})}, {"steered", false}};
      }
      auto appended = threads.append(*tx, node);
      EXPECT_TRUE(appended) << appended.error().to_string();
      if (appended) {
        written[appended->id] =
            WrittenNode{thread_id, appended->parent_id, appended->kind, appended->seq, node.body};
      }
    }
    EXPECT_TRUE(tx->commit());
  }
  return written;
}

enum class Outcome { kRefusedToOpen, kReportedOnRead, kServedIntact, kServedChanged };

// Opens the damaged store and reads every node, by thread and by id.
Outcome read_everything(const std::string& path, const std::map<std::string, WrittenNode>& written,
                        std::string& detail) {
  testing::ManualClock clock;
  ThreadRepository threads(clock);
  auto store = open_sqlite_store(SqliteStoreOptions{.path = path, .synchronous = Synchronous::kOff});
  if (!store) {
    detail = store.error().to_string();
    return Outcome::kRefusedToOpen;
  }
  auto tx = (*store)->begin(TxMode::kRead);
  if (!tx) {
    detail = tx.error().to_string();
    return Outcome::kReportedOnRead;
  }
  const auto same = [&](const NodeRecord& node) {
    auto it = written.find(node.id);
    return it != written.end() && it->second.thread_id == node.thread_id &&
           it->second.parent_id == node.parent_id && it->second.kind == node.kind &&
           it->second.seq == node.seq && it->second.body == node.body;
  };
  bool changed = false;
  std::optional<Error> reported;
  for (int t = 0; t < 3; ++t) {
    const std::string thread_id = "thread-" + std::to_string(t);
    auto nodes = threads.nodes_of(**tx, thread_id, 0);
    if (!nodes) {
      reported = nodes.error();
      continue;
    }
    size_t expected = 0;
    for (const auto& [id, node] : written) expected += node.thread_id == thread_id ? 1 : 0;
    if (nodes->size() != expected) {
      changed = true;
      detail =
          thread_id + ": " + std::to_string(nodes->size()) + " nodes served of " + std::to_string(expected);
    }
    for (const NodeRecord& node : *nodes) {
      if (!same(node)) {
        changed = true;
        detail = "node " + node.id + " served changed (by thread)";
      }
    }
  }
  for (const auto& [id, node] : written) {
    auto read = threads.get_node(**tx, id);
    if (!read) {
      reported = read.error();
      continue;
    }
    if (!same(*read)) {
      changed = true;
      detail = "node " + id + " served changed (by id)";
    }
  }
  if (changed) return Outcome::kServedChanged;
  if (reported) {
    detail = reported->to_string();
    return Outcome::kReportedOnRead;
  }
  return Outcome::kServedIntact;
}

void flip_bits(const std::string& path, std::mt19937_64& rng, int flips) {
  std::fstream file(path, std::ios::binary | std::ios::in | std::ios::out);
  file.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(file.tellg());
  for (int i = 0; i < flips; ++i) {
    const auto offset = static_cast<std::streamoff>(rng() % size);
    char byte = 0;
    file.seekg(offset);
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ (1 << (rng() % 8)));
    file.seekp(offset);
    file.write(&byte, 1);
  }
}

// Replay with KEEL_TEST_SEED=<seed>; KEEL_DAMAGE_STORES sets how many stores (60 by default).
TEST(SqliteDamageTest, StoresWithRandomBitFlipsNeverServeChangedNodes) {
  const uint64_t seed = env_or("KEEL_TEST_SEED", std::random_device{}());
  const uint64_t stores = env_or("KEEL_DAMAGE_STORES", 60);
  std::cout << "[ seed     ] StoresWithRandomBitFlipsNeverServeChangedNodes seed=" << seed << "\n";
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  testing::TempDir dir;
  std::map<Outcome, int> outcomes;
  for (uint64_t i = 0; i < stores; ++i) {
    const std::string path = dir.file("damaged-" + std::to_string(i) + ".db");
    const auto written = write_store(path, rng);
    ASSERT_EQ(written.size(), 45u);
    // Closing the last connection checkpointed the WAL into the file and removed it: the file is the store.
    ASSERT_FALSE(fs::exists(path + "-wal") && fs::file_size(path + "-wal") > 0);
    flip_bits(path, rng, 1 + static_cast<int>(rng() % 8));
    std::string detail;
    const Outcome outcome = read_everything(path, written, detail);
    ++outcomes[outcome];
    EXPECT_NE(outcome, Outcome::kServedChanged) << "store " << i << ": " << detail;
  }
  std::cout << "[ figures  ] " << stores
            << " stores with 1-8 flipped bits: " << outcomes[Outcome::kRefusedToOpen] << " refused to open, "
            << outcomes[Outcome::kReportedOnRead] << " reported damage on a read, "
            << outcomes[Outcome::kServedIntact] << " served intact data, "
            << outcomes[Outcome::kServedChanged] << " served changed data\n";
}

// A store written before schema 5 has nodes without digests: the migration seals every one, and they
// read back verified.
TEST(NodeDigestMigrationTest, NodesOfASchema4StoreGetDigestsThatTheirReadsVerify) {
  testing::TempDir dir;
  const std::string path = dir.file("old.db");
  std::mt19937_64 rng(7);
  const auto written = write_store(path, rng);
  ASSERT_EQ(written.size(), 45u);
  {  // Back to schema 4's layout: nodes without the digest column (and threads without schema 6's model and
     // schema 7's mcp_servers).
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "ALTER TABLE nodes DROP COLUMN digest; ALTER TABLE threads DROP COLUMN model; "
                           "ALTER TABLE threads DROP COLUMN mcp_servers; PRAGMA user_version = 4",
                           nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  std::string detail;
  EXPECT_EQ(read_everything(path, written, detail), Outcome::kServedIntact) << detail;
  auto store = open_sqlite_store(SqliteStoreOptions{.path = path, .synchronous = Synchronous::kOff}).value();
  EXPECT_EQ(store->schema_version(), current_schema_version());
  auto tx = store->begin(TxMode::kRead).value();
  auto missing = tx->query_one("SELECT count(*) FROM nodes WHERE digest IS NULL OR length(digest) != 64");
  ASSERT_TRUE(missing && *missing);
  EXPECT_EQ((*missing)->integer(0), 0);
}

}  // namespace
}  // namespace keel
