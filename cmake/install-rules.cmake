# install-rules.cmake - what `cmake --install` puts under the prefix (included from the top-level
# CMakeLists.txt unless CMAKE_SKIP_INSTALL_RULES):
#
#   include/yycache/*.h                         public headers only (never include/module.modulemap,
#                                               which exists for SwiftPM)
#   <libdir>/libyycache.so.X.Y.Z (+ links) or libyycache.a
#   <libdir>/cmake/YYCache/                     YYCacheConfig.cmake, YYCacheConfigVersion.cmake,
#                                               YYCacheTargets*.cmake, FindLibBSD/FindLibMD/FindHiredis.cmake
#   <libdir>/pkgconfig/yycache.pc               relocatable (${pcfiledir})
#   share/doc/yycache/LICENSE, NOTICE           the MIT license and the notice about YYCache
include(CMakePackageConfigHelpers)

set(YYCACHE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/YYCache"
  CACHE STRING "Where YYCacheConfig.cmake is installed, relative to the prefix")
set(YYCACHE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
  CACHE STRING "Where yycache.pc is installed, relative to the prefix")
mark_as_advanced(YYCACHE_INSTALL_CMAKEDIR YYCACHE_INSTALL_PKGCONFIGDIR)

install(TARGETS yycache
  EXPORT YYCacheTargets
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT YYCache_Runtime
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT YYCache_Runtime
          NAMELINK_COMPONENT YYCache_Development
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT YYCache_Development)

# The header list is the glob of include/yycache/*.h: module.modulemap is one level up and is
# never installed.
install(FILES ${YYCACHE_PUBLIC_HEADERS}
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/yycache"
  COMPONENT YYCache_Development)

install(EXPORT YYCacheTargets
  NAMESPACE YYCache::
  DESTINATION "${YYCACHE_INSTALL_CMAKEDIR}"
  COMPONENT YYCache_Development)

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/YYCacheConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/YYCacheConfig.cmake"
  INSTALL_DESTINATION "${YYCACHE_INSTALL_CMAKEDIR}")
# Pre-1.0 every minor release may break the API; SameMinorVersion would be the honest choice
# then, but SameMajorVersion is what consumers expect from 1.0 on. Kept at SameMajorVersion and
# to be revisited at 1.0 (the soversion follows the major version too).
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/YYCacheConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)
install(FILES
    "${PROJECT_BINARY_DIR}/YYCacheConfig.cmake"
    "${PROJECT_BINARY_DIR}/YYCacheConfigVersion.cmake"
    "${PROJECT_SOURCE_DIR}/cmake/FindLibBSD.cmake"
    "${PROJECT_SOURCE_DIR}/cmake/FindLibMD.cmake"
    "${PROJECT_SOURCE_DIR}/cmake/FindHiredis.cmake"
  DESTINATION "${YYCACHE_INSTALL_CMAKEDIR}"
  COMPONENT YYCache_Development)

# yycache.pc: the prefix is computed from the .pc file's own location (${pcfiledir}), so the
# installed tree can be moved and `cmake --install --prefix` works. Absolute install dirs (a
# distribution packager's choice) are written as given.
if(IS_ABSOLUTE "${YYCACHE_INSTALL_PKGCONFIGDIR}")
  set(YYCACHE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH pc_up "/prefix/${YYCACHE_INSTALL_PKGCONFIGDIR}" "/prefix")
  string(REGEX REPLACE "/$" "" pc_up "${pc_up}")
  set(YYCACHE_PC_PREFIX "\${pcfiledir}/${pc_up}")
endif()
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(YYCACHE_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(YYCACHE_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
configure_file("${PROJECT_SOURCE_DIR}/cmake/yycache.pc.in" "${PROJECT_BINARY_DIR}/yycache.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/yycache.pc"
  DESTINATION "${YYCACHE_INSTALL_PKGCONFIGDIR}"
  COMPONENT YYCache_Development)

# The license goes with the runtime component: every binary package of the library carries it.
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE" "${PROJECT_SOURCE_DIR}/NOTICE"
  DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/yycache"
  COMPONENT YYCache_Runtime)
