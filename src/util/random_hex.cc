// util/random_hex.cc — see random_hex.h.
#include "util/random_hex.h"

#include <sys/random.h>

#include <vector>

namespace keel {

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> raw(bytes);
  size_t got = 0;
  while (got < raw.size()) {
    const ssize_t n = ::getrandom(raw.data() + got, raw.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
    // n < 0: EINTR (a signal during the boot-time wait); getrandom cannot fail otherwise here.
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (const unsigned char byte : raw) {
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  return out;
}

}  // namespace keel
