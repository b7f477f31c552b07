# SPDX-License-Identifier: Apache-2.0
# Install rules and the Debian package (CPack DEB).
#
#   cmake --install build                          # onto this host, at the configured prefix
#   cmake --install build --prefix P               # staged: every file under P
#   cpack --config build/CPackConfig.cmake -B DIR  # DIR/slurm-k8s-bridge_<ver>_<arch>.deb
#
# What goes where (prefix /usr, the default):
#   /usr/bin/slurm-k8s-bridge, /usr/bin/bridgectl
#   <Slurm PluginDir>/job_submit_k8s_bridge.so   (SKB_SLURM_PLUGIN_DIR, below)
#   /usr/lib/systemd/system/slurm-k8s-bridge.service   (SKB_SYSTEMD_UNIT_DIR)
#   /etc/slurm-k8s-bridge/config.json            (SKB_CONFIG_DIR; a conffile: dpkg keeps
#                                                 local edits)
#   /usr/share/doc/slurm-k8s-bridge/              README.md, copyright (DEP-5),
#                                                 changelog.Debian.gz, changelog.gz
#   /usr/share/man/man1/bridgectl.1.gz, /usr/share/man/man8/slurm-k8s-bridge.8.gz
#   /usr/share/lintian/overrides/slurm-k8s-bridge   (the lintian tags accepted, each with
#                                                    its reason; tests/package/lintian_test.sh)
# A system daemon with a Slurm plugin: /usr unless the prefix was chosen (the unit names the
# binaries and the config by their installed paths, so the package is built with the prefix
# the tree was configured with; CPACK_PACKAGING_INSTALL_PREFIX follows it).
#
# Every destination is relative to the install prefix, so `cmake --install build --prefix P`
# writes nothing outside P (tests/package/install_prefix_test.sh). Two paths are not under
# /usr on Debian, and are absolute only for an install at the configured prefix (the host's
# own install, and cpack's, which installs at that prefix under its staging DESTDIR):
#   - the config: SKB_CONFIG_DIR, GNUInstallDirs' full sysconfdir (/etc for the prefix /usr,
#     <prefix>/etc otherwise); any other prefix puts it in <P>/<CMAKE_INSTALL_SYSCONFDIR>;
#   - the plugin: Slurm's PluginDir, relative to the prefix when it lies under it (Debian's
#     <libdir>/slurm-wlm with the prefix /usr); one outside the prefix (a Slurm in /opt) is
#     an absolute destination for every install, said at configure time.
if(CMAKE_INSTALL_PREFIX_INITIALIZED_TO_DEFAULT)
  set(CMAKE_INSTALL_PREFIX /usr CACHE PATH "Install prefix" FORCE)
endif()
include(GNUInstallDirs)
# `install`/cpack install what is built and build nothing (its preinstall step would
# otherwise build every test and benchmark first).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)

# Slurm loads plugins from slurm.conf's PluginDir, whose default is compiled into libslurm:
# Debian's is <libdir>/slurm-wlm (/usr/lib/x86_64-linux-gnu/slurm-wlm on Debian 12), upstream's
# <libdir>/slurm. Found beside the libslurm this tree links, by the plugins already there.
get_filename_component(_skb_slurm_libdir "${Slurm_LIBRARY}" REALPATH)
get_filename_component(_skb_slurm_libdir "${_skb_slurm_libdir}" DIRECTORY)
set(_skb_plugin_dir "")
foreach(_d slurm-wlm slurm)
  if(EXISTS "${_skb_slurm_libdir}/${_d}/auth_munge.so" OR
     EXISTS "${_skb_slurm_libdir}/${_d}/job_submit_all_partitions.so")
    set(_skb_plugin_dir "${_skb_slurm_libdir}/${_d}")
    break()
  endif()
endforeach()
if(NOT _skb_plugin_dir)
  if(EXISTS /etc/debian_version)
    set(_skb_plugin_dir "${_skb_slurm_libdir}/slurm-wlm")
  else()
    set(_skb_plugin_dir "${_skb_slurm_libdir}/slurm")
  endif()
endif()
set(SKB_SLURM_PLUGIN_DIR "${_skb_plugin_dir}" CACHE PATH
    "Slurm's PluginDir: where job_submit_k8s_bridge.so is installed (absolute, or relative to the prefix)")
set(SKB_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE PATH
    "Where the systemd unit is installed (relative to the prefix, or absolute)")
set(SKB_CONFIG_DIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}/slurm-k8s-bridge" CACHE PATH
    "The config's directory as the unit and dpkg's conffiles name it (absolute)")
if(NOT IS_ABSOLUTE "${SKB_CONFIG_DIR}")
  message(FATAL_ERROR "SKB_CONFIG_DIR must be absolute (the unit names it): ${SKB_CONFIG_DIR}")
endif()
set(SKB_DOC_DIR "${CMAKE_INSTALL_FULL_DATAROOTDIR}/doc/slurm-k8s-bridge")
set(_skb_doc_dest "${CMAKE_INSTALL_DATAROOTDIR}/doc/slurm-k8s-bridge")

# The plugin's destination: relative to the prefix wherever possible.
set(_skb_plugin_dest "${SKB_SLURM_PLUGIN_DIR}")
if(IS_ABSOLUTE "${SKB_SLURM_PLUGIN_DIR}")
  cmake_path(IS_PREFIX CMAKE_INSTALL_PREFIX "${SKB_SLURM_PLUGIN_DIR}" NORMALIZE _skb_under)
  if(_skb_under)
    file(RELATIVE_PATH _skb_plugin_dest "${CMAKE_INSTALL_PREFIX}" "${SKB_SLURM_PLUGIN_DIR}")
  else()
    message(STATUS "Install: the plugin's directory ${SKB_SLURM_PLUGIN_DIR} is outside the "
                   "prefix ${CMAKE_INSTALL_PREFIX}: every install writes it there")
  endif()
endif()
# The config outside the configured prefix (/etc for /usr): there for an install at that
# prefix, under <P>/<sysconfdir> for any other prefix P.
if(IS_ABSOLUTE "${CMAKE_INSTALL_SYSCONFDIR}")
  set(_skb_config_relocated "\${CMAKE_INSTALL_PREFIX}/etc/slurm-k8s-bridge")
else()
  set(_skb_config_relocated "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}/slurm-k8s-bridge")
endif()
message(STATUS "Install: plugin into ${SKB_SLURM_PLUGIN_DIR}, config in ${SKB_CONFIG_DIR}")

install(TARGETS slurm-k8s-bridge bridgectl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS job_submit_k8s_bridge LIBRARY DESTINATION ${_skb_plugin_dest})
configure_file(${PROJECT_SOURCE_DIR}/bridge/dist/slurm-k8s-bridge.service.in
               ${PROJECT_BINARY_DIR}/dist/slurm-k8s-bridge.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dist/slurm-k8s-bridge.service
        DESTINATION ${SKB_SYSTEMD_UNIT_DIR})
string(REGEX REPLACE "(.)/$" "\\1" _skb_configured_prefix "${CMAKE_INSTALL_PREFIX}")
install(CODE "
  if(CMAKE_INSTALL_PREFIX STREQUAL \"${_skb_configured_prefix}\")
    set(_skb_config_dir \"${SKB_CONFIG_DIR}\")
  else()
    set(_skb_config_dir \"${_skb_config_relocated}\")
  endif()
  file(INSTALL DESTINATION \"\${_skb_config_dir}\" TYPE FILE
       FILES \"${PROJECT_SOURCE_DIR}/bridge/dist/config.json\")
")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${_skb_doc_dest})
# Debian Policy 12.5 and 12.7: the machine-readable copyright file (DEP-5, which refers to
# /usr/share/common-licenses/Apache-2.0), the package's changelog.Debian.gz and the
# upstream changelog.gz (CHANGELOG.md), each gzipped with -9n (no name or time stamp: the
# same bytes on every build) when the tree is configured, and again when its source changes.
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/dist)
function(skb_gzip src dst)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  execute_process(COMMAND gzip -9nc ${src} OUTPUT_FILE ${dst} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip of ${src} failed: ${rc}")
  endif()
endfunction()
skb_gzip(${PROJECT_SOURCE_DIR}/bridge/dist/changelog.Debian
         ${PROJECT_BINARY_DIR}/dist/changelog.Debian.gz)
skb_gzip(${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_BINARY_DIR}/dist/changelog.gz)
# Policy 12.1: man pages gzipped (-9n) too; every program has one (the daemon's in section 8).
skb_gzip(${PROJECT_SOURCE_DIR}/docs/bridgectl.1 ${PROJECT_BINARY_DIR}/dist/bridgectl.1.gz)
skb_gzip(${PROJECT_SOURCE_DIR}/docs/slurm-k8s-bridge.8
         ${PROJECT_BINARY_DIR}/dist/slurm-k8s-bridge.8.gz)
install(FILES ${PROJECT_SOURCE_DIR}/bridge/dist/copyright
              ${PROJECT_BINARY_DIR}/dist/changelog.Debian.gz
              ${PROJECT_BINARY_DIR}/dist/changelog.gz
        DESTINATION ${_skb_doc_dest})
install(FILES ${PROJECT_BINARY_DIR}/dist/bridgectl.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_BINARY_DIR}/dist/slurm-k8s-bridge.8.gz
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
# lintian's overrides: the tags the package keeps on purpose, each with a comment saying why
# (tests/package/lintian_test.sh fails on any other error, warning or info tag).
install(FILES ${PROJECT_SOURCE_DIR}/bridge/dist/lintian-overrides
        DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME slurm-k8s-bridge)

# The Debian package. Shared-library dependencies come from dpkg-shlibdeps; the rest is what
# the binaries load or need at run time without linking it:
#   - libslurm dlopens auth_munge.so (and cred_munge.so ...) from slurm-wlm-basic-plugins,
#     which also creates the slurm user (uid 64030) the unit runs as;
#   - the plugin only loads into slurmctld of the release it was built against (major.minor).
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _skb_slurm_mm "${Slurm_VERSION}")
set(_skb_slurm_major "${CMAKE_MATCH_1}")
math(EXPR _skb_slurm_next_minor "${CMAKE_MATCH_2} + 1")
if(_skb_slurm_next_minor LESS 10)
  set(_skb_slurm_next_minor "0${_skb_slurm_next_minor}")
endif()
set(_skb_slurm_next "${_skb_slurm_major}.${_skb_slurm_next_minor}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PACKAGE_NAME slurm-k8s-bridge)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Debian revision: the package is not Debian-native (its changelog is changelog.Debian,
# the upstream one CHANGELOG.md); bump it with a new bridge/dist/changelog.Debian entry.
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_PACKAGE_CONTACT "slurm-k8s-bridge maintainers <slurm-k8s-bridge@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Slurm and Kubernetes sharing GPU nodes")
# Lines of at most 80 characters (Policy 5.6.13; CPack indents each by one space).
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "A Slurm job_submit plugin and a daemon that let Slurm and Kubernetes schedule\n"
  "the same GPU nodes. Kubernetes sees Slurm's nodes as taken by reservation pods;\n"
  "an inference pod of high priority can borrow a node (the Slurm jobs on it get\n"
  "their checkpoint signal, a grace period, and are requeued) and the node returns\n"
  "to Slurm when Kubernetes no longer uses it. Node health set in Kubernetes\n"
  "drains the node in Slurm, and Slurm's node states show up as node conditions.\n"
  "\n"
  "This package holds the daemon (a systemd service, not enabled on install),\n"
  "its command-line client bridgectl, and the job_submit plugin for slurmctld,\n"
  "built for Slurm ${_skb_slurm_mm}.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE https://github.com/slurm-k8s-bridge/slurm-k8s-bridge)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# adduser: postinst creates the slurm user where it is missing.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "adduser, slurm-wlm-basic-plugins (>= ${_skb_slurm_mm}~), slurm-wlm-basic-plugins (<< ${_skb_slurm_next}~)")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "munge, ca-certificates")
set(CPACK_DEBIAN_PACKAGE_BREAKS "slurmctld (<< ${_skb_slurm_mm}~), slurmctld (>= ${_skb_slurm_next}~)")
# The maintainer scripts: the package's own steps and debhelper's snippets inlined
# (bridge/dist/postinst.in says which), the config's directory filled in.
foreach(_f conffiles postinst postrm)
  configure_file(${PROJECT_SOURCE_DIR}/bridge/dist/${_f}.in ${PROJECT_BINARY_DIR}/dist/${_f} @ONLY)
endforeach()
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/dist/conffiles ${PROJECT_BINARY_DIR}/dist/postinst
    ${PROJECT_SOURCE_DIR}/bridge/dist/prerm ${PROJECT_BINARY_DIR}/dist/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Only the three artifacts above, without the build's test and bench programs, stripped as
# dh_strip strips (cmake/SkbDebStrip.cmake, run on the staged files: also the .comment and
# .note sections, which CPack's own strip keeps).
set(CPACK_STRIP_FILES OFF)
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/SkbDebStrip.cmake)
set(CPACK_SKB_STRIP ${CMAKE_STRIP})
include(CPack)
