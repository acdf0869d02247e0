// util/uuid_v7.cc — UUIDv7 ids (RFC 9562 §5.7) with the §6.2 method 1 monotonic counter.
//
// Layout (128 bits, big-endian):
//   48 bits unix_ts_ms | 4 bits version (0111) | 12 bits rand_a = counter | 2 bits variant (10) |
//   62 bits rand_b (fresh random per id)
// Ids of one source are strictly increasing as strings because (timestamp, counter) strictly increases:
//   - a millisecond later than the last one used seeds the counter randomly with its top bit clear
//     (RFC 9562 §6.2 "counter rollover guards"), leaving at least 2048 increments before overflow;
//   - the same millisecond, or an earlier one (the wall clock went backwards), keeps the last
//     millisecond and increments the counter;
//   - when the counter would overflow, the timestamp is advanced by one millisecond and reseeded.
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "keel/ids.h"

namespace keel {
namespace {

constexpr int64_t kMaxTimestampMs = (int64_t{1} << 48) - 1;
constexpr uint16_t kMaxCounter = 0x0fff;
constexpr uint16_t kCounterSeedMask = 0x07ff;  // top counter bit clear: >= 2048 increments of headroom

void random_bytes(unsigned char* out, int len) {
  // RAND_bytes fails only when OpenSSL cannot seed its DRBG; an id source without randomness cannot
  // keep its uniqueness promise, and next_id() has no error channel, so this is fatal.
  if (RAND_bytes(out, len) != 1) throw std::runtime_error("OpenSSL RAND_bytes failed");
}

}  // namespace

std::string UuidV7Source::next_id() {
  // Draw randomness before taking the lock: it is the slow part and needs no shared state.
  std::array<unsigned char, 10> rnd{};
  random_bytes(rnd.data(), static_cast<int>(rnd.size()));
  const auto seed = static_cast<uint16_t>(((rnd[0] << 8) | rnd[1]) & kCounterSeedMask);

  // A clock before 1970 or after the year 10889 cannot be represented; clamp rather than wrap, so
  // order is kept.
  const int64_t now = std::clamp<int64_t>(clock_.now_unix_ms(), 0, kMaxTimestampMs);

  int64_t ms = 0;
  uint16_t counter = 0;
  {
    MutexLock lock(mu_);
    if (now > last_ms_) {
      last_ms_ = now;
      counter_ = seed;
    } else if (counter_ < kMaxCounter) {
      ++counter_;
    } else {
      ++last_ms_;  // counter overflow: borrow the next millisecond
      counter_ = seed;
    }
    ms = last_ms_;
    counter = counter_;
  }

  std::array<unsigned char, 16> b{};
  const auto ts = static_cast<uint64_t>(ms);
  for (int i = 0; i < 6; ++i) b[static_cast<size_t>(i)] = static_cast<unsigned char>(ts >> (40 - 8 * i));
  b[6] = static_cast<unsigned char>(0x70 | (counter >> 8));
  b[7] = static_cast<unsigned char>(counter & 0xff);
  b[8] = static_cast<unsigned char>(0x80 | (rnd[2] & 0x3f));
  std::copy(rnd.begin() + 3, rnd.end(), b.begin() + 9);

  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(36);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    text.push_back(kHex[b[i] >> 4]);
    text.push_back(kHex[b[i] & 0x0f]);
  }
  return text;
}

bool is_uuid_v7(const std::string& text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;  // uppercase hex is not canonical
    }
  }
  const char variant = text[19];
  return text[14] == '7' && (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

}  // namespace keel
