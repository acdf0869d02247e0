// util/random_hex.h — secrets and unique names as text: random bytes from the kernel, written as hex.
//
// getrandom() without flags blocks only until the kernel's pool is first initialised (early boot) and then
// never fails for these sizes; an interrupted call is retried. Used for tokens, session cookies and the
// names of temporary files.
#pragma once

#include <cstddef>
#include <string>

namespace keel {

// `bytes` random bytes as 2 * `bytes` lower-case hex digits.
std::string random_hex(size_t bytes);

}  // namespace keel
