# SPDX-License-Identifier: Apache-2.0
# Helpers to declare GoogleTest executables with a CTest label.
#
#   skb_add_unit_test(name src... LIBS lib...)          label "unit", runs anywhere
#   skb_add_testbed_test(name LABEL integration|e2e|chaos src... LIBS lib...)
#       needs the testbed: the test reads the environment of `scripts/testbed env`.
# Both compile their sources with SKB_TEST_CXX_FLAGS after the build type's flags.
include(GoogleTest)

# How long ctest waits for a test binary to list its tests (DISCOVERY_MODE PRE_TEST lists
# them each time ctest runs). CMake's default, 5 s, is too short for a sanitizer binary
# started at idle priority beside busy testbed lanes: CI once lost the whole dp-asan step
# to "Process terminated due to timeout" while listing skb_k8s_test.
set(SKB_TEST_DISCOVERY_TIMEOUT 300)

function(skb_add_unit_test name)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE ${SKB_TEST_COMPILE_OPTIONS})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name} PROPERTIES LABELS unit DISCOVERY_MODE PRE_TEST
                       DISCOVERY_TIMEOUT ${SKB_TEST_DISCOVERY_TIMEOUT})
endfunction()

function(skb_add_testbed_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "LIBS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE ${SKB_TEST_COMPILE_OPTIONS})
  # skb_testbed_main (tests/testbed/testbed_main.cc) claims a testbed for the process before
  # any test runs: one test per testbed at a time, across ctest runs too, and with
  # SKB_TESTBED_POOL any free testbed of a pool (scripts/test runs lanes side by side).
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock skb_testbed_main)
  gtest_discover_tests(${name} PROPERTIES LABELS ${ARG_LABEL}
                       TIMEOUT ${ARG_TIMEOUT} DISCOVERY_MODE PRE_TEST
                       DISCOVERY_TIMEOUT ${SKB_TEST_DISCOVERY_TIMEOUT})
endfunction()
