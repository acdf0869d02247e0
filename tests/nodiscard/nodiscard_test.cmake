# Run with cmake -P (tests/nodiscard/CMakeLists.txt passes CXX_COMPILER, FLAGS, INCLUDE_DIR, SOURCE).
# Fails with a message at the first compile that does not end as it must.
function(compile result_var output_var)
  execute_process(
    COMMAND ${CXX_COMPILER} ${FLAGS} -I${INCLUDE_DIR} -Werror=unused-result -fsyntax-only ${ARGN} ${SOURCE}
    RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${result_var} ${status} PARENT_SCOPE)
  set(${output_var} "${out}${err}" PARENT_SCOPE)
endfunction()

compile(status output)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the probe with every result used does not compile, so the test proves nothing:\n${output}")
endif()

foreach(way RESULT RESULT_VOID ERROR FAIL)
  compile(status output -DKEEL_PROBE_${way})
  if(status EQUAL 0)
    message(FATAL_ERROR "ignoring a value (KEEL_PROBE_${way}) compiled: [[nodiscard]] is gone from keel/error.h")
  endif()
  if(NOT output MATCHES "nodiscard|unused-result")
    message(FATAL_ERROR "KEEL_PROBE_${way} failed for another reason than [[nodiscard]]:\n${output}")
  endif()
endforeach()
message(STATUS "every ignored Result, Error and fail() is a compile error")
