# Install rules for the package: tools, the CMake package config with
# attnc_add_kernel(), and (from runtime/) the runtime library and headers.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNC_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnc)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/attncConfig.cmake.in
  ${PROJECT_BINARY_DIR}/attncConfig.cmake
  INSTALL_DESTINATION ${ATTNC_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/attncConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/attncConfig.cmake
  ${PROJECT_BINARY_DIR}/attncConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/AttncAddKernel.cmake
  DESTINATION ${ATTNC_CMAKE_INSTALL_DIR})
install(EXPORT attncTargets NAMESPACE attnc:: DESTINATION ${ATTNC_CMAKE_INSTALL_DIR})

# pkg-config for apps that load kernel libraries through libattnrt, and for
# apps that link --no-runtime kernel objects to the shared Halide runtime.
# The prefix is found from the .pc file's own folder, so an install moved
# or made with `cmake --install --prefix` still resolves.
file(RELATIVE_PATH ATTNC_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" ATTNC_PC_TO_PREFIX "${ATTNC_PC_TO_PREFIX}")
set(ATTNC_PC_PREFIX "\${pcfiledir}/${ATTNC_PC_TO_PREFIX}")
foreach(pc attnrt attnc_halide_runtime)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
