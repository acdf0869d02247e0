# Every third-party library comes from Debian's packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.11 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
if(KEEL_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(KEEL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# Test executables are unity builds: a test target's *_test.cc files are compiled as one translation unit
# (batches of up to 8), so the GoogleTest, nlohmann/json and keel templates they share are instantiated and
# optimised at -O2 once per target instead of once per file, which is most of a test file's compile time
# (measurements in docs/contributing.md). A test target's other sources (fixtures, helpers such as
# transport/protocol_schema.cc) and every library source are compiled one by one as before, so
# scripts/clang_tidy.sh still finds each of them in compile_commands.json. The test files of one target share
# one scope: a file-local helper needs a name of its own within the target (a clash is a compile error).
# KEEL_UNITY_TESTS=OFF compiles each test file alone.
option(KEEL_UNITY_TESTS "Compile each test target's *_test.cc files as one translation unit" ON)
# Test targets whose files define the same file-local name (text_block, all, kKey, Outcome, send,
# streamed_text), or where one file's namespace hides another's (model_server's `testing::TempDir`): compiled
# file by file until the names differ; then the target leaves this list.
set(KEEL_NOT_UNITY_TESTS keel_session_context_test keel_config_test keel_credentials_test keel_browser_cdp_test
    keel_browser_guard_input_test keel_serve_e2e_test keel_model_server_unit_test)
function(keel_unity_test_sources name)
  if(KEEL_UNITY_TESTS AND NOT name IN_LIST KEEL_NOT_UNITY_TESTS)
    set_target_properties(${name} PROPERTIES UNITY_BUILD ON)
  endif()
  foreach(source IN LISTS ARGN)
    if(NOT source MATCHES "_test\\.cc$")
      set_source_files_properties(${source} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
endfunction()

# keel_test(NAME LABEL SOURCES... [LIBS ...]): one GoogleTest executable registered with CTest under LABEL.
function(keel_test name label)
  if(NOT KEEL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  keel_unity_test_sources(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} keel_build_flags GTest::gtest GTest::gtest_main GTest::gmock)
  gtest_discover_tests(${name} PROPERTIES LABELS ${label} DISCOVERY_TIMEOUT 60)
endfunction()
