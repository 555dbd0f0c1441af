# FindHiredis.cmake - finds hiredis (the Redis client of the remote tier) and defines the imported
# target Hiredis::Hiredis.
#
# Used by YYCache's own build and installed next to YYCacheConfig.cmake, so that consumers of a
# static libyycache resolve the same target name the exported link interface refers to.
# pkg-config (hiredis.pc) is the primary source; find_path/find_library locate the files.
#
# Result variables: Hiredis_FOUND, Hiredis_VERSION (when pkg-config knows it),
# Hiredis_INCLUDE_DIR (the folder holding hiredis/hiredis.h), Hiredis_LIBRARY.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_Hiredis QUIET hiredis)
endif()

# The headers are included as <hiredis/hiredis.h>: the include dir is the parent of hiredis/.
set(_hiredis_hints "")
foreach(dir ${PC_Hiredis_INCLUDE_DIRS})
  get_filename_component(parent "${dir}" DIRECTORY)
  list(APPEND _hiredis_hints "${dir}" "${parent}")
endforeach()
find_path(Hiredis_INCLUDE_DIR NAMES hiredis/hiredis.h HINTS ${_hiredis_hints})
unset(_hiredis_hints)
find_library(Hiredis_LIBRARY NAMES hiredis HINTS ${PC_Hiredis_LIBRARY_DIRS})
set(Hiredis_VERSION "${PC_Hiredis_VERSION}")

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hiredis
  REQUIRED_VARS Hiredis_LIBRARY Hiredis_INCLUDE_DIR
  VERSION_VAR Hiredis_VERSION)

if(Hiredis_FOUND AND NOT TARGET Hiredis::Hiredis)
  add_library(Hiredis::Hiredis UNKNOWN IMPORTED)
  set_target_properties(Hiredis::Hiredis PROPERTIES
    IMPORTED_LOCATION "${Hiredis_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Hiredis_INCLUDE_DIR}")
endif()
mark_as_advanced(Hiredis_INCLUDE_DIR Hiredis_LIBRARY)
