// Tests for UuidV7Source and is_uuid_v7 (keel/ids.h): RFC 9562 layout, the method 1 counter, and ordering
// under a frozen, backwards-moving and concurrent clock.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "keel/clock.h"
#include "keel/ids.h"
#include "testing/manual_clock.h"

namespace keel {
namespace {

using keel::testing::ManualClock;

constexpr int64_t kStartMs = 1'700'000'000'000;

uint64_t hex_value(const std::string& hex) { return std::stoull(hex, nullptr, 16); }

// The 48-bit unix_ts_ms field: the first 12 hex digits.
int64_t timestamp_ms(const std::string& id) {
  return static_cast<int64_t>(hex_value(id.substr(0, 8) + id.substr(9, 4)));
}

// The 12-bit rand_a field, which method 1 uses as the counter: the 3 digits after the version nibble.
uint64_t counter(const std::string& id) { return hex_value(id.substr(15, 3)); }

// The 62-bit rand_b field: the low 2 bits of digit 19 and the 15 digits after it.
std::string rand_b(const std::string& id) {
  std::string bits = std::to_string(hex_value(id.substr(19, 1)) & 0x3);  // += : see GCC 12 -Wrestrict bug
  bits += id.substr(20, 3);
  bits += id.substr(24, 12);
  return bits;
}

TEST(UuidV7SourceTest, ProducesCanonicalLowercaseText) {
  ManualClock clock;
  UuidV7Source source(clock);
  for (int i = 0; i < 100; ++i) {
    const std::string id = source.next_id();
    ASSERT_EQ(id.size(), 36u) << id;
    for (size_t pos = 0; pos < id.size(); ++pos) {
      if (pos == 8 || pos == 13 || pos == 18 || pos == 23) {
        EXPECT_EQ(id[pos], '-') << id;
      } else {
        EXPECT_TRUE((id[pos] >= '0' && id[pos] <= '9') || (id[pos] >= 'a' && id[pos] <= 'f')) << id;
      }
    }
    EXPECT_TRUE(is_uuid_v7(id)) << id;
  }
}

TEST(UuidV7SourceTest, SetsVersionSevenAndRfcVariantBits) {
  ManualClock clock;
  UuidV7Source source(clock);
  for (int i = 0; i < 1000; ++i) {
    const std::string id = source.next_id();
    EXPECT_EQ(id[14], '7') << id;
    EXPECT_EQ(hex_value(id.substr(19, 1)) >> 2, 0b10u) << id;  // variant 10xx
  }
}

TEST(UuidV7SourceTest, EmbedsTheClockMillisecondsAsTimestamp) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  EXPECT_EQ(timestamp_ms(source.next_id()), kStartMs);
  clock.advance(std::chrono::milliseconds(5));
  EXPECT_EQ(timestamp_ms(source.next_id()), kStartMs + 5);
  clock.set_unix_ms(kStartMs + 86'400'000);
  EXPECT_EQ(timestamp_ms(source.next_id()), kStartMs + 86'400'000);
}

TEST(UuidV7SourceTest, EmbedsSystemClockTimeWhenUsedWithTheRealClock) {
  SystemClock clock;
  UuidV7Source source(clock);
  const int64_t before = clock.now_unix_ms();
  const std::string id = source.next_id();
  const int64_t after = clock.now_unix_ms();
  EXPECT_GE(timestamp_ms(id), before);
  EXPECT_LE(timestamp_ms(id), after + 1);  // +1: a counter overflow may borrow the next millisecond
}

TEST(UuidV7SourceTest, TenThousandIdsWithFrozenClockAreStrictlyIncreasing) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  std::string previous = source.next_id();
  for (int i = 1; i < 10'000; ++i) {
    const std::string id = source.next_id();
    ASSERT_GT(id, previous) << "id " << i;
    ASSERT_TRUE(is_uuid_v7(id)) << id;
    previous = id;
  }
}

TEST(UuidV7SourceTest, CounterIncrementsByOneWithinAMillisecond) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  std::string previous = source.next_id();
  for (int i = 0; i < 1000; ++i) {
    const std::string id = source.next_id();
    if (timestamp_ms(id) == timestamp_ms(previous)) {
      EXPECT_EQ(counter(id), counter(previous) + 1) << id;
    }
    previous = id;
  }
}

TEST(UuidV7SourceTest, CounterOverflowAdvancesTimestampByOneMillisecond) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  std::vector<std::string> ids{source.next_id()};
  ASSERT_EQ(timestamp_ms(ids.front()), kStartMs);
  while (timestamp_ms(ids.back()) == kStartMs) {
    ids.push_back(source.next_id());
    ASSERT_LE(ids.size(), 4097u) << "a 12-bit counter cannot give more than 4096 ids one millisecond";
  }
  const std::string& last_in_first_ms = ids[ids.size() - 2];
  EXPECT_EQ(counter(last_in_first_ms), 0xfffu);
  EXPECT_EQ(timestamp_ms(ids.back()), kStartMs + 1);
  EXPECT_GT(ids.back(), last_in_first_ms);
  // The seed has its top bit clear, so a millisecond always yields at least 2048 + 1 ids.
  EXPECT_GE(ids.size() - 1, 2049u);
}

TEST(UuidV7SourceTest, CounterIsSeededRandomlyWithTopBitClearEachMillisecond) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  std::set<uint64_t> seeds;
  for (int ms = 0; ms < 200; ++ms) {
    const std::string id = source.next_id();
    EXPECT_LT(counter(id), 0x800u) << id;
    seeds.insert(counter(id));
    clock.advance(std::chrono::milliseconds(1));
  }
  // 200 draws from 2048 values: all equal has probability 2048^-199.
  EXPECT_GT(seeds.size(), 1u);
}

TEST(UuidV7SourceTest, ClockGoingBackwardsKeepsTheLastTimestampAndOrder) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  const std::string before = source.next_id();
  clock.set_unix_ms(kStartMs - 60'000);
  const std::string after = source.next_id();
  EXPECT_GT(after, before);
  EXPECT_EQ(timestamp_ms(after), kStartMs);
  EXPECT_EQ(counter(after), counter(before) + 1);

  // Once the clock passes the last timestamp again, ids use the clock's time.
  clock.set_unix_ms(kStartMs + 1);
  const std::string later = source.next_id();
  EXPECT_GT(later, after);
  EXPECT_EQ(timestamp_ms(later), kStartMs + 1);
}

TEST(UuidV7SourceTest, ClockReachingABorrowedMillisecondContinuesItsCounter) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  std::string id = source.next_id();
  while (timestamp_ms(id) == kStartMs) id = source.next_id();  // overflow into kStartMs + 1
  clock.set_unix_ms(kStartMs + 1);  // the clock catches up with the borrowed millisecond
  const std::string next = source.next_id();
  EXPECT_GT(next, id);
  EXPECT_EQ(timestamp_ms(next), kStartMs + 1);
  EXPECT_EQ(counter(next), counter(id) + 1);
}

TEST(UuidV7SourceTest, ClockBeforeTheEpochIsClampedToZero) {
  ManualClock clock(-5);
  UuidV7Source source(clock);
  const std::string id = source.next_id();
  EXPECT_TRUE(is_uuid_v7(id)) << id;
  EXPECT_EQ(timestamp_ms(id), 0);
}

TEST(UuidV7SourceTest, RandomPartDiffersBetweenIds) {
  ManualClock clock(kStartMs);
  UuidV7Source source(clock);
  std::set<std::string> random_parts;
  for (int i = 0; i < 1000; ++i) random_parts.insert(rand_b(source.next_id()));
  // 62 random bits per id: a collision among 1000 has probability below 1e-12.
  EXPECT_EQ(random_parts.size(), 1000u);
}

TEST(UuidV7SourceTest, TwoSourcesOnTheSameClockDoNotCollide) {
  ManualClock clock(kStartMs);
  UuidV7Source a(clock);
  UuidV7Source b(clock);
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    ids.insert(a.next_id());
    ids.insert(b.next_id());
  }
  EXPECT_EQ(ids.size(), 2000u);
}

TEST(UuidV7SourceTest, ConcurrentCallersGetUniqueIdsIncreasingPerThread) {
  ManualClock clock(kStartMs);  // frozen: forces counter overflows while threads race
  UuidV7Source source(clock);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<std::string>> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&source, &ids = per_thread[static_cast<size_t>(t)]] {
      for (int i = 0; i < kPerThread; ++i) ids.push_back(source.next_id());
    });
  }
  for (std::thread& thread : threads) thread.join();

  std::set<std::string> all;
  for (const auto& ids : per_thread) {
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_TRUE(is_uuid_v7(ids[i])) << ids[i];
      if (i > 0) {
        ASSERT_GT(ids[i], ids[i - 1]);
      }
      all.insert(ids[i]);
    }
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST(IsUuidV7Test, AcceptsTheRfc9562ExampleAndGeneratedIds) {
  EXPECT_TRUE(is_uuid_v7("017f22e2-79b0-7cc3-98c4-dc0c0c07398f"));  // RFC 9562 appendix A.6
  EXPECT_TRUE(is_uuid_v7("00000000-0000-7000-8000-000000000000"));
  EXPECT_TRUE(is_uuid_v7("ffffffff-ffff-7fff-bfff-ffffffffffff"));
  for (const char variant : {'8', '9', 'a', 'b'}) {
    std::string id = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";
    id[19] = variant;
    EXPECT_TRUE(is_uuid_v7(id)) << id;
  }
}

TEST(IsUuidV7Test, RejectsOtherVersions) {
  EXPECT_FALSE(is_uuid_v7("017f22e2-79b0-4cc3-98c4-dc0c0c07398f"));  // v4
  EXPECT_FALSE(is_uuid_v7("017f22e2-79b0-6cc3-98c4-dc0c0c07398f"));  // v6
  EXPECT_FALSE(is_uuid_v7("017f22e2-79b0-8cc3-98c4-dc0c0c07398f"));  // v8
  EXPECT_FALSE(is_uuid_v7("00000000-0000-0000-0000-000000000000"));  // nil
}

TEST(IsUuidV7Test, RejectsNonRfcVariants) {
  for (const char variant : {'0', '7', 'c', 'd', 'e', 'f'}) {
    std::string id = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";
    id[19] = variant;
    EXPECT_FALSE(is_uuid_v7(id)) << id;
  }
}

TEST(IsUuidV7Test, RejectsNonCanonicalText) {
  EXPECT_FALSE(is_uuid_v7(""));
  EXPECT_FALSE(is_uuid_v7("017F22E2-79B0-7CC3-98C4-DC0C0C07398F"));    // uppercase
  EXPECT_FALSE(is_uuid_v7("017f22e2-79b0-7cc3-98c4-dc0c0c07398F"));    // one uppercase digit
  EXPECT_FALSE(is_uuid_v7("{017f22e2-79b0-7cc3-98c4-dc0c0c07398f}"));  // braces
  EXPECT_FALSE(is_uuid_v7("017f22e279b07cc398c4dc0c0c07398f"));        // no dashes
  EXPECT_FALSE(is_uuid_v7("017f22e2-79b0-7cc3-98c4-dc0c0c07398"));     // too short
  EXPECT_FALSE(is_uuid_v7("017f22e2-79b0-7cc3-98c4-dc0c0c07398f0"));   // too long
  EXPECT_FALSE(is_uuid_v7("017f22e279-b0-7cc3-98c4-dc0c0c07398f"));    // dash moved
  EXPECT_FALSE(is_uuid_v7("017f22e2-79b0-7cc3-98c4-dc0c0c07398g"));    // not hex
  EXPECT_FALSE(is_uuid_v7("017f22e2_79b0_7cc3_98c4_dc0c0c07398f"));    // wrong separator
  EXPECT_FALSE(is_uuid_v7(std::string("017f22e2-79b0-7cc3-98c4-dc0c0c0739\0f", 36)));
}

}  // namespace
}  // namespace keel
