# Compiler flags every keel target shares: warnings, -Werror in CI, sanitizers.
add_library(keel_build_flags INTERFACE)
target_compile_options(keel_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual -Wimplicit-fallthrough -Wformat=2
  # GCC 12 reports false positives inside std::variant/std::optional copies at -O2 (and more so under the
  # sanitizers); the sanitizers and the tests catch real uses of uninitialized memory.
  -Wno-maybe-uninitialized)
if(KEEL_WERROR)
  target_compile_options(keel_build_flags INTERFACE -Werror)
endif()
if(KEEL_FAILPOINTS)
  target_compile_definitions(keel_build_flags INTERFACE KEEL_FAILPOINTS_ENABLED=1)
endif()

if(NOT KEEL_DEBUG_INFO)
  # After the build type's -g, so it wins. scripts/test.sh builds this way: debug information is a third of
  # the compile time of a Boost.Asio translation unit, and CI's time budget is finite.
  add_compile_options(-g0)
endif()

if(KEEL_SANITIZE STREQUAL "address")
  # GCC 12 reports false -Wmaybe-uninitialized inside std::variant under the sanitizers' instrumentation.
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
                      -Wno-maybe-uninitialized)
  add_link_options(-fsanitize=address,undefined)
elseif(KEEL_SANITIZE STREQUAL "thread")
  # -Wno-tsan: Asio uses std::atomic_thread_fence, which TSan does not model; GCC warns about it.
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -Wno-maybe-uninitialized -Wno-tsan)
  add_link_options(-fsanitize=thread)
elseif(NOT KEEL_SANITIZE STREQUAL "")
  message(FATAL_ERROR "KEEL_SANITIZE must be '', 'address' or 'thread', not '${KEEL_SANITIZE}'")
endif()
