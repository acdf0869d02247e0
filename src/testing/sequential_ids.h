// testing/sequential_ids.h — an IdSource that yields "<prefix>-000001", "<prefix>-000002", ...
//
// Ids sort in creation order like UUIDv7 ids do, so code that relies on time-ordered ids behaves the
// same under test. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "keel/ids.h"

namespace keel::testing {

class SequentialIdSource final : public IdSource {
 public:
  explicit SequentialIdSource(std::string prefix = "id") : prefix_(std::move(prefix)) {}
  std::string next_id() override;

 private:
  std::string prefix_;
  std::atomic<uint64_t> next_{1};
};

}  // namespace keel::testing
