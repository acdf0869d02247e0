// tools/regex_support.h — making std::regex safe to construct on several threads at once.
//
// libstdc++'s std::ctype<char>::narrow() fills a per-facet cache lazily, writing it from whichever thread
// first narrows a character, and std::regex's compiler narrows every character of a pattern. Two threads
// compiling regexes (valijson compiles "pattern" constraints on every validation) therefore write that
// cache concurrently: a data race (GCC PR 77704), which ThreadSanitizer reports. Filling the cache once,
// before any concurrent use, leaves only reads. Patterns chosen by the model never go to std::regex (a
// backtracking matcher): search_files uses RE2.
#pragma once

namespace keel::detail {

// Idempotent and thread-safe; cheap after the first call. Call before constructing a std::regex.
void prepare_concurrent_regex();

}  // namespace keel::detail
