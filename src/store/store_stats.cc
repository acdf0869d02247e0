// StoreStats helpers (include/keel/store.h).
#include <cstdint>
#include <numeric>
#include <vector>

#include "keel/store.h"

namespace keel {

double sync_percentile(const std::vector<uint64_t>& histogram, double fraction) {
  const uint64_t total = std::accumulate(histogram.begin(), histogram.end(), uint64_t{0});
  if (total == 0) return 0;
  // The rank of the sample the fraction names, counting from 1; at least the first sample.
  const auto rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(fraction * static_cast<double>(total) + 0.999999));
  uint64_t seen = 0;
  for (size_t i = 0; i < histogram.size(); ++i) {
    seen += histogram[i];
    if (seen >= rank) return static_cast<double>((i + 1) * StoreStats::kSyncBucketMicros);
  }
  return static_cast<double>(histogram.size() * StoreStats::kSyncBucketMicros);
}

}  // namespace keel
