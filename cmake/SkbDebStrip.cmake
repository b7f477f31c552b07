# SPDX-License-Identifier: Apache-2.0
# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS in cmake/SkbPackaging.cmake): strips the
# staged ELF files as debhelper's dh_strip does -- shared objects with --strip-unneeded,
# programs with the default -- and removes the .comment and .note sections from both
# (lintian's binary-has-unneeded-section). CPACK_TEMPORARY_INSTALL_DIRECTORY is the staging
# directory CPack installed into.
if(NOT CPACK_SKB_STRIP)
  message(FATAL_ERROR "SkbDebStrip: no strip program (CMAKE_STRIP) to strip with")
endif()
file(GLOB_RECURSE _skb_files LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*")
set(_skb_stripped 0)
foreach(_f IN LISTS _skb_files)
  if(IS_SYMLINK "${_f}")
    continue()
  endif()
  file(READ "${_f}" _skb_magic LIMIT 4 HEX)
  if(NOT _skb_magic STREQUAL "7f454c46")  # "\x7fELF"
    continue()
  endif()
  set(_skb_args --remove-section=.comment --remove-section=.note)
  if(_f MATCHES "\\.so(\\.[0-9]+)*$")
    list(APPEND _skb_args --strip-unneeded)
  endif()
  execute_process(COMMAND ${CPACK_SKB_STRIP} ${_skb_args} "${_f}" RESULT_VARIABLE _skb_rc)
  if(NOT _skb_rc EQUAL 0)
    message(FATAL_ERROR "SkbDebStrip: ${CPACK_SKB_STRIP} ${_skb_args} ${_f} failed: ${_skb_rc}")
  endif()
  math(EXPR _skb_stripped "${_skb_stripped} + 1")
endforeach()
if(_skb_stripped EQUAL 0)
  message(FATAL_ERROR "SkbDebStrip: no ELF file under ${CPACK_TEMPORARY_INSTALL_DIRECTORY}")
endif()
message(STATUS "SkbDebStrip: stripped ${_skb_stripped} ELF files")
