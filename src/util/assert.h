// util/assert.h — KEEL_ASSERT and KEEL_BUG: stop the process when an invariant keel's own code guarantees
// turns out false.
//
// For bugs only. A condition that input, files, the network, a model or a client can make false is an
// expected failure and returns an Error (keel/error.h); asserting on it would let input crash the process.
// Assert only what the surrounding code itself establishes, with a comment saying why it holds.
//
// On failure both print "<file>:<line>: " and the failed condition (or the message) to stderr, then call
// std::abort(), so a core dump or the test harness sees the exact site. Both stay on in every build type
// (NDEBUG does not remove them): the checks are cheap and a bug caught in production beats corrupted state.
#pragma once

namespace keel::detail {

// Prints "<file>:<line>: <what>" to stderr and aborts. Kept out of line so each assertion costs one branch.
[[noreturn]] void assertion_failed(const char* file, int line, const char* what) noexcept;

}  // namespace keel::detail

// KEEL_ASSERT(cond): aborts with "<file>:<line>: KEEL_ASSERT(cond) failed" when cond is false.
#define KEEL_ASSERT(cond)  \
  (static_cast<bool>(cond) \
       ? void(0)           \
       : ::keel::detail::assertion_failed(__FILE__, __LINE__, "KEEL_ASSERT(" #cond ") failed"))

// KEEL_BUG("message"): marks a place the code can never reach; aborts with "<file>:<line>: bug: message".
// The message must be a string literal.
#define KEEL_BUG(message) ::keel::detail::assertion_failed(__FILE__, __LINE__, "bug: " message)
