#include <gtest/gtest.h>

#include "keel/store.h"

namespace keel {
namespace {

TEST(StoreStatsTest, SyncPercentileIsTheUpperEdgeOfTheBucketThatReachesIt) {
  std::vector<uint64_t> histogram(StoreStats::kSyncBuckets, 0);
  EXPECT_EQ(sync_percentile(histogram, 0.5), 0) << "no syncs, no percentile";
  histogram[3] = 90;   // 75..100 µs
  histogram[10] = 9;   // 250..275 µs
  histogram[399] = 1;  // 10 ms and more
  EXPECT_EQ(sync_percentile(histogram, 0.5), 100);
  EXPECT_EQ(sync_percentile(histogram, 0.9), 100);
  EXPECT_EQ(sync_percentile(histogram, 0.95), 275);
  EXPECT_EQ(sync_percentile(histogram, 0.99), 275);
  EXPECT_EQ(sync_percentile(histogram, 1.0), 10000);
  EXPECT_EQ(sync_percentile(histogram, 0.0), 100) << "the smallest sample";
}

}  // namespace
}  // namespace keel
