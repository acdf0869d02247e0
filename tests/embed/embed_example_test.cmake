# Run with cmake -P (tests/embed/CMakeLists.txt passes the variables). Fails with a message at the first
# step that does not succeed.
function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${step} failed (${status}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${prefix} ${WORK_DIR}/store.db ${WORK_DIR}/store.db-wal ${WORK_DIR}/store.db-shm)

run("install" ${CMAKE_COMMAND} --install ${KEEL_BINARY_DIR} --prefix ${prefix})

# Only the installed package: the prefix is the one place the example may find keel in.
set(configure ${CMAKE_COMMAND} -S ${EXAMPLE_DIR} -B ${build} -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
if(COMPILER_LAUNCHER)
  list(APPEND configure -DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER})
endif()
if(EXTRA_FLAGS)
  list(APPEND configure -DCMAKE_CXX_FLAGS=${EXTRA_FLAGS} -DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS})
endif()
run("configure the example" ${configure})
run("build the example" ${CMAKE_COMMAND} --build ${build})
run("run the example" ${build}/keel_embed_example ${WORK_DIR}/store.db)

set(expected "assistant: Hello from an embedded keel.\nturn.complete: end\n")
if(NOT last_output STREQUAL expected)
  message(FATAL_ERROR "the example printed:\n${last_output}\nexpected:\n${expected}")
endif()
message(STATUS "the example built against the installed package and ran its turn")
