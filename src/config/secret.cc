#include "config/secret.h"

#include <sodium.h>

#include <cstring>
#include <utility>

namespace keel::config {

Secret::~Secret() { wipe(); }

Secret::Secret(Secret&& other) noexcept
    : bytes_(std::exchange(other.bytes_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Secret& Secret::operator=(Secret&& other) noexcept {
  if (this != &other) {
    wipe();
    bytes_ = std::exchange(other.bytes_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Secret Secret::zeroed(size_t size) {
  Secret secret;
  if (size > 0) {
    secret.bytes_ = std::make_unique<unsigned char[]>(size);  // value-initialized: zeroes
    secret.size_ = size;
  }
  return secret;
}

Secret Secret::copy_of(std::string_view bytes) {
  Secret secret = zeroed(bytes.size());
  if (!bytes.empty()) std::memcpy(secret.bytes_.get(), bytes.data(), bytes.size());
  return secret;
}

Secret Secret::take(std::string& bytes) {
  Secret secret = copy_of(bytes);
  if (!bytes.empty()) sodium_memzero(bytes.data(), bytes.size());
  bytes.clear();
  return secret;
}

Secret Secret::clone() const { return copy_of(reveal()); }

std::string_view Secret::reveal() const {
  if (size_ == 0) return {};
  return {reinterpret_cast<const char*>(bytes_.get()), size_};
}

std::span<const unsigned char> Secret::reveal_bytes() const { return {bytes_.get(), size_}; }

std::span<unsigned char> Secret::writable_bytes() { return {bytes_.get(), size_}; }

bool operator==(const Secret& a, const Secret& b) {
  if (a.size_ != b.size_) return false;
  if (a.size_ == 0) return true;
  return sodium_memcmp(a.bytes_.get(), b.bytes_.get(), a.size_) == 0;
}

void Secret::wipe() {
  if (bytes_ && size_ > 0) sodium_memzero(bytes_.get(), size_);
  bytes_.reset();
  size_ = 0;
}

}  // namespace keel::config
