# FindLibMD.cmake - finds libmd (MD5 for data/ file names) and defines the imported target
# LibMD::LibMD.
#
# Used by YYCache's own build and installed next to YYCacheConfig.cmake, so that consumers of a
# static libyycache resolve the same target name the exported link interface refers to.
# pkg-config is only a hint; the header and library are located with find_path/find_library.
#
# Result variables: LibMD_FOUND, LibMD_VERSION (when pkg-config knows it), LibMD_INCLUDE_DIR,
# LibMD_LIBRARY.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_LibMD QUIET libmd)
endif()

find_path(LibMD_INCLUDE_DIR NAMES md5.h HINTS ${PC_LibMD_INCLUDE_DIRS})
find_library(LibMD_LIBRARY NAMES md HINTS ${PC_LibMD_LIBRARY_DIRS})
set(LibMD_VERSION "${PC_LibMD_VERSION}")

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibMD
  REQUIRED_VARS LibMD_LIBRARY LibMD_INCLUDE_DIR
  VERSION_VAR LibMD_VERSION)

if(LibMD_FOUND AND NOT TARGET LibMD::LibMD)
  add_library(LibMD::LibMD UNKNOWN IMPORTED)
  set_target_properties(LibMD::LibMD PROPERTIES
    IMPORTED_LOCATION "${LibMD_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LibMD_INCLUDE_DIR}")
endif()
mark_as_advanced(LibMD_INCLUDE_DIR LibMD_LIBRARY)
