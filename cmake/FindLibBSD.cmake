# FindLibBSD.cmake - finds libbsd (arc4random_buf for the hash seed) and defines the imported
# target LibBSD::LibBSD.
#
# Used by YYCache's own build and installed next to YYCacheConfig.cmake, so that consumers of a
# static libyycache resolve the same target name the exported link interface refers to.
# pkg-config is only a hint; the header and library are located with find_path/find_library.
#
# Result variables: LibBSD_FOUND, LibBSD_VERSION (when pkg-config knows it), LibBSD_INCLUDE_DIR,
# LibBSD_LIBRARY.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_LibBSD QUIET libbsd)
endif()

find_path(LibBSD_INCLUDE_DIR NAMES bsd/stdlib.h HINTS ${PC_LibBSD_INCLUDE_DIRS})
find_library(LibBSD_LIBRARY NAMES bsd HINTS ${PC_LibBSD_LIBRARY_DIRS})
set(LibBSD_VERSION "${PC_LibBSD_VERSION}")

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibBSD
  REQUIRED_VARS LibBSD_LIBRARY LibBSD_INCLUDE_DIR
  VERSION_VAR LibBSD_VERSION)

if(LibBSD_FOUND AND NOT TARGET LibBSD::LibBSD)
  add_library(LibBSD::LibBSD UNKNOWN IMPORTED)
  set_target_properties(LibBSD::LibBSD PROPERTIES
    IMPORTED_LOCATION "${LibBSD_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LibBSD_INCLUDE_DIR}")
endif()
mark_as_advanced(LibBSD_INCLUDE_DIR LibBSD_LIBRARY)
