// config/secret.h — Secret: key bytes that are hard to leak by accident.
//
// A Secret owns a copy of key material (an API key, the master key, a decrypted credential) and
// guarantees:
//   - its bytes are zeroed (sodium_memzero) when it is destroyed or moved from, and no copy is ever made
//     implicitly: it is move-only, and clone() is the one explicit way to duplicate it;
//   - it cannot be printed: no operator<< (deleted), no fmt formatter, no implicit conversion to a string.
//     The bytes are reached only through reveal() / reveal_bytes(), names that stand out in review;
//   - == compares in time independent of the contents (sodium_memcmp); only the lengths may leak.
// Thread-compatible: like any value, one owner at a time.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace keel::config {

class Secret {
 public:
  Secret() = default;  // empty
  ~Secret();
  Secret(Secret&& other) noexcept;
  Secret& operator=(Secret&& other) noexcept;
  Secret(const Secret&) = delete;
  Secret& operator=(const Secret&) = delete;

  // A Secret holding a copy of `bytes`. The caller remains responsible for its own copy.
  static Secret copy_of(std::string_view bytes);
  // Takes the bytes of `bytes` and zeroes that string's buffer (use it for strings read from a file or a
  // prompt, whose buffer would otherwise keep the key).
  static Secret take(std::string& bytes);
  // `size` zero bytes, to be filled through writable_bytes() (a decryption target, a random key).
  static Secret zeroed(size_t size);

  Secret clone() const;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The key bytes. Valid while this Secret lives and is not moved from; never log, format or keep them.
  std::string_view reveal() const;
  std::span<const unsigned char> reveal_bytes() const;
  std::span<unsigned char> writable_bytes();

  // Constant-time in the contents.
  friend bool operator==(const Secret& a, const Secret& b);

  // Printing a Secret is a compile error.
  friend std::ostream& operator<<(std::ostream&, const Secret&) = delete;

 private:
  void wipe();

  std::unique_ptr<unsigned char[]> bytes_;
  size_t size_ = 0;
};

}  // namespace keel::config
