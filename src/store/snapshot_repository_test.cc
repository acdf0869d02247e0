#include "store/snapshot_repository.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "keel/error_codes.h"
#include "keel/store.h"
#include "testing/manual_clock.h"
#include "testing/store_test.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;

using testing::code_of;
using testing::must;

class SnapshotRepositoryTest : public testing::StoreTest {
 protected:
  void SetUp() override { reopen(); }

  static EnvironmentSnapshotRecord snapshot(std::string id) {
    EnvironmentSnapshotRecord s;
    s.id = std::move(id);
    s.version = 1;
    s.digest = "sha256:0123abcd";
    s.body = json{{"prompt", "You are keel."},
                  {"model", {{"name", "m"}, {"temperature", 0.5}}},
                  {"tool_catalog", json::array({{{"name", "browser_click"}, {"digest", "sha256:ff"}}})}};
    return s;
  }

  SnapshotRepository repo_{clock_};
};

TEST_F(SnapshotRepositoryTest, PutThenGetReturnsDigestAndBodyAsGiven) {
  {
    auto tx = begin();
    EnvironmentSnapshotRecord stored = must(repo_.put(*tx, snapshot("s1")));
    EXPECT_EQ(stored.created_at, clock_.now_unix_ms());
    must(tx->commit());
  }
  reopen();
  auto tx = begin(TxMode::kRead);
  EnvironmentSnapshotRecord got = must(repo_.get(*tx, "s1"));
  EXPECT_EQ(got.id, "s1");
  EXPECT_EQ(got.version, 1);
  EXPECT_EQ(got.digest, "sha256:0123abcd");
  EXPECT_EQ(got.body, snapshot("s1").body);
  EXPECT_EQ(got.created_at, clock_.now_unix_ms());
}

TEST_F(SnapshotRepositoryTest, UnknownSnapshotIsNotFound) {
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(code_of(repo_.get(*tx, "missing")), codes::kSnapshotNotFound);
}

TEST_F(SnapshotRepositoryTest, OversizedBodyIsRefused) {
  EnvironmentSnapshotRecord big = snapshot("big");
  big.body = json{{"prompt", std::string(SnapshotRepository::kMaxBodyBytes, 'x')}};
  auto tx = begin();
  EXPECT_EQ(code_of(repo_.put(*tx, big)), codes::kStorePayloadTooLarge);
  EXPECT_EQ(code_of(repo_.get(*tx, "big")), codes::kSnapshotNotFound);
}

TEST_F(SnapshotRepositoryTest, PutValidatesIdDigestVersionAndUniqueness) {
  auto tx = begin();
  EnvironmentSnapshotRecord no_digest = snapshot("a");
  no_digest.digest.clear();
  EXPECT_EQ(code_of(repo_.put(*tx, no_digest)), codes::kInvalidArgument);
  EnvironmentSnapshotRecord bad_version = snapshot("b");
  bad_version.version = 0;
  EXPECT_EQ(code_of(repo_.put(*tx, bad_version)), codes::kInvalidArgument);
  EXPECT_EQ(code_of(repo_.put(*tx, snapshot(""))), codes::kInvalidArgument);
  EnvironmentSnapshotRecord v2 = snapshot("c");
  v2.version = 2;
  must(repo_.put(*tx, v2));
  EXPECT_EQ(must(repo_.get(*tx, "c")).version, 2);
  EXPECT_EQ(code_of(repo_.put(*tx, snapshot("c"))), codes::kStoreConstraint) << "snapshots are immutable";
}

TEST_F(SnapshotRepositoryTest, RolledBackPutLeavesNothing) {
  {
    auto tx = begin();
    must(repo_.put(*tx, snapshot("s1")));
    tx->rollback();
  }
  auto tx = begin(TxMode::kRead);
  EXPECT_EQ(code_of(repo_.get(*tx, "s1")), codes::kSnapshotNotFound);
}

TEST_F(SnapshotRepositoryTest, DamagedBodyIsADecodeFailure) {
  auto tx = begin();
  must(repo_.put(*tx, snapshot("s1")));
  must(tx->execute("UPDATE environment_snapshots SET body = '{' WHERE id = 's1'"));
  EXPECT_EQ(code_of(repo_.get(*tx, "s1")), codes::kStoreDecode);
}

}  // namespace
}  // namespace keel
