# `cmake --install`: the public headers (include/keel/), the libraries an embedder links and a CMake
# package, so that a program builds against an installed keel with find_package(keel) alone
# (docs/embedding.md; examples/embed/ is built that way in the tests).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# keel::engine brings the store, protocol, tools, policy, providers and util libraries with it. keel_build_flags
# appears in their link interfaces (as link-only: its warnings do not reach an embedder), so it is
# exported too.
set(KEEL_INSTALLED_TARGETS keel_build_flags keel_util keel_protocol keel_store keel_protocol_events keel_providers
    keel_tools keel_policy
    keel_engine)
foreach(target IN LISTS KEEL_INSTALLED_TARGETS)
  string(REGEX REPLACE "^keel_" "" exported "${target}")
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${exported})
endforeach()

install(TARGETS ${KEEL_INSTALLED_TARGETS} EXPORT keelTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/keel DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(KEEL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/keel)
install(EXPORT keelTargets NAMESPACE keel:: DESTINATION ${KEEL_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/keelConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/keelConfig.cmake INSTALL_DESTINATION ${KEEL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/keelConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/keelConfig.cmake ${PROJECT_BINARY_DIR}/keelConfigVersion.cmake
        DESTINATION ${KEEL_CMAKE_DIR})
