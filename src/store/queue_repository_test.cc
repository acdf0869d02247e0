#include "store/queue_repository.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "keel/error_codes.h"
#include "keel/store.h"
#include "store/thread_repository.h"
#include "testing/manual_clock.h"
#include "testing/store_test.h"
#include "testing/temp_dir.h"

namespace keel {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

using testing::code_of;
using testing::must;

class QueueRepositoryTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    reopen();
    auto tx = begin();
    must(threads_.create(*tx, "t1", "first"));
    must(threads_.create(*tx, "t2", "second"));
    must(tx->commit());
  }

  static QueuedInput item(std::string id, std::string thread_id = "t1") {
    QueuedInput q;
    q.input = json{{"text", "input " + id}};
    q.id = std::move(id);
    q.thread_id = std::move(thread_id);
    return q;
  }

  std::vector<std::string> ids(Transaction& tx, const std::string& thread_id) {
    std::vector<std::string> out;
    for (const QueuedInput& q : must(queue_.list(tx, thread_id))) out.push_back(q.id);
    return out;
  }

  QueueRepository queue_{clock_};
};

TEST_F(QueueRepositoryTest, EnqueueKeepsOrderAndAssignsRevisionAndTimestamps) {
  auto tx = begin();
  QueuedInput first = must(queue_.enqueue(*tx, item("b")));
  EXPECT_EQ(first.revision, 1);
  EXPECT_EQ(first.created_at, clock_.now_unix_ms());
  clock_.advance(1ms);
  QueuedInput second = must(queue_.enqueue(*tx, item("a")));
  EXPECT_GT(second.position, first.position);
  must(queue_.enqueue(*tx, item("c", "t2")));
  must(tx->commit());

  reopen();
  auto read = begin(TxMode::kRead);
  std::vector<QueuedInput> listed = must(queue_.list(*read, "t1"));
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].id, "b");
  EXPECT_EQ(listed[0].input, (json{{"text", "input b"}}));
  EXPECT_EQ(listed[0].revision, 1);
  EXPECT_EQ(listed[1].id, "a");
  EXPECT_EQ(must(queue_.count(*read, "t1")), 2);
  EXPECT_EQ(must(queue_.count(*read, "t2")), 1);
  EXPECT_EQ(must(queue_.count(*read, "t3")), 0);
}

TEST_F(QueueRepositoryTest, NinthEnqueueIsRejected) {
  {
    auto tx = begin();
    for (int i = 1; i <= 8; ++i) must(queue_.enqueue(*tx, item("q" + std::to_string(i))));
    must(tx->commit());
  }
  auto tx = begin();
  auto ninth = queue_.enqueue(*tx, item("q9"));
  EXPECT_EQ(code_of(ninth), codes::kQueueFull);
  EXPECT_EQ(must(queue_.count(*tx, "t1")), 8);
  // Another thread has its own bound.
  must(queue_.enqueue(*tx, item("other", "t2")));
  // Making room lets the next one in, at the back.
  must(queue_.pop_front(*tx, "t1"));
  must(queue_.enqueue(*tx, item("q9")));
  EXPECT_EQ(code_of(queue_.enqueue(*tx, item("q10"))), codes::kQueueFull);
  std::vector<std::string> order = ids(*tx, "t1");
  ASSERT_EQ(order.size(), 8u);
  EXPECT_EQ(order.front(), "q2");
  EXPECT_EQ(order.back(), "q9");
  EXPECT_EQ(QueueRepository::kMaxQueuedPerThread, 8);
}

TEST_F(QueueRepositoryTest, ThreadsWithItemsListsEachThreadWithAQueueOnce) {
  auto tx = begin();
  EXPECT_TRUE(must(queue_.threads_with_items(*tx)).empty());
  for (const char* id : {"a", "b"}) must(queue_.enqueue(*tx, item(id, "t2")));
  must(queue_.enqueue(*tx, item("c", "t1")));
  EXPECT_EQ(must(queue_.threads_with_items(*tx)), (std::vector<std::string>{"t1", "t2"}));
  must(queue_.pop_front(*tx, "t1"));
  EXPECT_EQ(must(queue_.threads_with_items(*tx)), (std::vector<std::string>{"t2"}));
}

TEST_F(QueueRepositoryTest, RemoveKeepsTheOrderOfTheRest) {
  auto tx = begin();
  for (const char* id : {"a", "b", "c", "d"}) must(queue_.enqueue(*tx, item(id)));
  QueuedInput removed = must(queue_.remove(*tx, "t1", "b"));
  EXPECT_EQ(removed.id, "b");
  EXPECT_EQ(ids(*tx, "t1"), (std::vector<std::string>{"a", "c", "d"}));
  must(queue_.enqueue(*tx, item("e")));
  must(queue_.remove(*tx, "t1", "d"));
  EXPECT_EQ(ids(*tx, "t1"), (std::vector<std::string>{"a", "c", "e"}));
  EXPECT_EQ(code_of(queue_.remove(*tx, "t1", "b")), codes::kQueueItemNotFound);
}

TEST_F(QueueRepositoryTest, UpdateReplacesTheInputAndBumpsTheRevision) {
  {
    auto tx = begin();
    must(queue_.enqueue(*tx, item("a")));
    must(queue_.enqueue(*tx, item("b")));
    must(tx->commit());
  }
  clock_.advance(3ms);
  auto tx = begin();
  QueuedInput updated = must(queue_.update(*tx, "t1", "a", json{{"text", "edited"}}, 1));
  EXPECT_EQ(updated.revision, 2);
  EXPECT_EQ(updated.updated_at, clock_.now_unix_ms());
  EXPECT_EQ(updated.input, (json{{"text", "edited"}}));
  QueuedInput again = must(queue_.update(*tx, "t1", "a", json{{"text", "again"}}));
  EXPECT_EQ(again.revision, 3);
  must(tx->commit());

  auto read = begin(TxMode::kRead);
  QueuedInput stored = must(queue_.get(*read, "t1", "a"));
  EXPECT_EQ(stored.revision, 3);
  EXPECT_EQ(stored.input, (json{{"text", "again"}}));
  EXPECT_EQ(ids(*read, "t1"), (std::vector<std::string>{"a", "b"})) << "an update keeps the position";
}

TEST_F(QueueRepositoryTest, StaleRevisionIsAConflict) {
  auto tx = begin();
  must(queue_.enqueue(*tx, item("a")));
  must(queue_.update(*tx, "t1", "a", json{{"text", "one"}}, 1));
  EXPECT_EQ(code_of(queue_.update(*tx, "t1", "a", json{{"text", "two"}}, 1)), codes::kRevisionConflict);
  QueuedInput stored = must(queue_.get(*tx, "t1", "a"));
  EXPECT_EQ(stored.revision, 2);
  EXPECT_EQ(stored.input, (json{{"text", "one"}}));
}

TEST_F(QueueRepositoryTest, UnknownItemIsNotFoundEvenWhenItBelongsToAnotherThread) {
  auto tx = begin();
  must(queue_.enqueue(*tx, item("a", "t2")));
  EXPECT_EQ(code_of(queue_.get(*tx, "t1", "a")), codes::kQueueItemNotFound);
  EXPECT_EQ(code_of(queue_.update(*tx, "t1", "a", json{{"text", "x"}})), codes::kQueueItemNotFound);
  EXPECT_EQ(code_of(queue_.remove(*tx, "t1", "a")), codes::kQueueItemNotFound);
  EXPECT_EQ(code_of(queue_.update(*tx, "t2", "zzz", json{{"text", "x"}})), codes::kQueueItemNotFound);
  EXPECT_EQ(must(queue_.count(*tx, "t2")), 1);
}

TEST_F(QueueRepositoryTest, PopFrontTakesItemsInOrderUntilEmpty) {
  auto tx = begin();
  for (const char* id : {"a", "b", "c"}) must(queue_.enqueue(*tx, item(id)));
  must(queue_.remove(*tx, "t1", "a"));
  std::vector<std::string> popped;
  while (auto next = must(queue_.pop_front(*tx, "t1"))) popped.push_back(next->id);
  EXPECT_EQ(popped, (std::vector<std::string>{"b", "c"}));
  EXPECT_FALSE(must(queue_.pop_front(*tx, "t1")));
  EXPECT_EQ(must(queue_.count(*tx, "t1")), 0);
}

TEST_F(QueueRepositoryTest, EnqueueNeedsALiveThreadAndAnId) {
  auto tx = begin();
  EXPECT_EQ(code_of(queue_.enqueue(*tx, item("a", "missing"))), codes::kThreadNotFound);
  must(threads_.mark_deleted(*tx, "t2"));
  EXPECT_EQ(code_of(queue_.enqueue(*tx, item("b", "t2"))), codes::kThreadDeleted);
  EXPECT_EQ(code_of(queue_.enqueue(*tx, item(""))), codes::kInvalidArgument);
  must(queue_.enqueue(*tx, item("c")));
  EXPECT_EQ(code_of(queue_.enqueue(*tx, item("c"))), codes::kStoreConstraint);
}

TEST_F(QueueRepositoryTest, RolledBackTransactionLeavesNothing) {
  {
    auto tx = begin();
    must(queue_.enqueue(*tx, item("a")));
    must(tx->commit());
  }
  {
    auto tx = begin();
    must(queue_.enqueue(*tx, item("b")));
    must(queue_.update(*tx, "t1", "a", json{{"text", "edited"}}));
    must(queue_.pop_front(*tx, "t1"));
    tx->rollback();
  }
  auto tx = begin(TxMode::kRead);
  std::vector<QueuedInput> listed = must(queue_.list(*tx, "t1"));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, "a");
  EXPECT_EQ(listed[0].revision, 1);
  EXPECT_EQ(listed[0].input, (json{{"text", "input a"}}));
}

TEST_F(QueueRepositoryTest, DamagedInputIsADecodeFailure) {
  auto tx = begin();
  must(queue_.enqueue(*tx, item("a")));
  must(tx->execute("UPDATE run_queue SET input = '[1,' WHERE id = 'a'"));
  EXPECT_EQ(code_of(queue_.list(*tx, "t1")), codes::kStoreDecode);
  EXPECT_EQ(code_of(queue_.pop_front(*tx, "t1")), codes::kStoreDecode);
}

}  // namespace
}  // namespace keel
