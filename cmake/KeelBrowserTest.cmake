# keel_browser_test(NAME [PAGES] SOURCES... SUITES... [LIBS ...]): a GoogleTest executable that drives a real
# Chromium, registered as one CTest test per gtest suite (not per test case: each suite starts one browser,
# 1-2 s, and shares it). Labels e2e and browser; RESOURCE_LOCK chromium runs the browser suites one at a
# time while other tests use the other cores. A suite skips only when Chromium cannot start, and fails
# instead when KEEL_REQUIRE_CHROMIUM=1 (scripts/test.sh sets it; see src/browser/browser_test_support.h).
# PAGES: the test serves tests/e2e/browser/pages (KEEL_BROWSER_PAGES names the folder).
function(keel_browser_test name)
  if(NOT KEEL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "PAGES" "" "SOURCES;SUITES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  keel_unity_test_sources(${name} ${ARG_SOURCES})  # as keel_test's (cmake/KeelDependencies.cmake)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} keel_build_flags GTest::gtest GTest::gtest_main GTest::gmock)
  target_compile_options(${name} PRIVATE -Wno-mismatched-new-delete)
  if(ARG_PAGES)
    target_compile_definitions(${name} PRIVATE KEEL_BROWSER_PAGES="${PROJECT_SOURCE_DIR}/tests/e2e/browser/pages")
  endif()
  foreach(suite IN LISTS ARG_SUITES)
    add_test(NAME ${name}.${suite} COMMAND ${name} --gtest_filter=${suite}.*)
    set_tests_properties(${name}.${suite} PROPERTIES
      LABELS "e2e;browser"
      RESOURCE_LOCK chromium
      TIMEOUT 240
      SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
  endforeach()
endfunction()
