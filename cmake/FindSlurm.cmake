# SPDX-License-Identifier: Apache-2.0
# Finds libslurm and its headers (Debian: libslurm-dev). Defines Slurm::slurm and
# Slurm::headers (include directory only, for the plugin, which must not link libslurm:
# slurmctld already has its symbols) and Slurm_VERSION (e.g. 22.05.08) from slurm_version.h.
#
# A plugin is only loadable by the exact Slurm release it was built against; the
# version found here is printed and compiled into the plugin.
find_path(Slurm_INCLUDE_DIR slurm/slurm.h)
find_library(Slurm_LIBRARY NAMES slurm)
if(Slurm_INCLUDE_DIR AND EXISTS "${Slurm_INCLUDE_DIR}/slurm/slurm_version.h")
  file(STRINGS "${Slurm_INCLUDE_DIR}/slurm/slurm_version.h" _skb_slurm_ver
       REGEX "^#define SLURM_VERSION_NUMBER")
  # SLURM_VERSION_NUMBER is 0xMMmmuu: major, minor, micro.
  string(REGEX REPLACE ".*0x([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F]).*"
         "\\1;\\2;\\3" _skb_parts "${_skb_slurm_ver}")
  set(Slurm_VERSION "")
  foreach(_p IN LISTS _skb_parts)
    math(EXPR _d "0x${_p}")
    if(_d LESS 10)
      set(_d "0${_d}")
    endif()
    list(APPEND Slurm_VERSION ${_d})
  endforeach()
  list(JOIN Slurm_VERSION "." Slurm_VERSION)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Slurm
  REQUIRED_VARS Slurm_LIBRARY Slurm_INCLUDE_DIR
  VERSION_VAR Slurm_VERSION)
if(Slurm_FOUND)
  message(STATUS "Slurm ${Slurm_VERSION}: the plugin will only load into this exact release")
  if(NOT TARGET Slurm::headers)
    add_library(Slurm::headers INTERFACE IMPORTED)
    set_target_properties(Slurm::headers PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${Slurm_INCLUDE_DIR}")
  endif()
  if(NOT TARGET Slurm::slurm)
    add_library(Slurm::slurm UNKNOWN IMPORTED)
    set_target_properties(Slurm::slurm PROPERTIES
      IMPORTED_LOCATION "${Slurm_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${Slurm_INCLUDE_DIR}")
  endif()
endif()
mark_as_advanced(Slurm_INCLUDE_DIR Slurm_LIBRARY)
