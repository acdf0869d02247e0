// fuzz/fuzz_support.h — what the libFuzzer targets share: turning an invariant violation into a crash the
// fuzzer reports, and reading the chunk size a test case asks for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace keel::fuzz {

// Aborts (a finding) when an invariant the code under test promises does not hold.
inline void require(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

// Whether `text` can be written as a JSON string, as keel will write it (nlohmann refuses invalid UTF-8).
inline bool writable_as_json(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

// A test case is one byte choosing how the rest is cut into chunks (0: one chunk; n: chunks of n bytes),
// then the bytes of a response body.
struct ChunkedInput {
  size_t chunk = 0;
  std::string_view body;
};

inline ChunkedInput chunked_input(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  return {data[0] == 0 ? std::max<size_t>(body.size(), 1) : data[0], body};
}

}  // namespace keel::fuzz
