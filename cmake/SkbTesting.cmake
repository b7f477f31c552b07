# Helpers to declare GoogleTest executables with a CTest label.
#
#   skb_add_unit_test(name src... LIBS lib...)          label "unit", runs anywhere
#   skb_add_testbed_test(name LABEL integration|e2e|chaos src... LIBS lib...)
#       needs the testbed: the test reads the environment of `scripts/testbed env`.
include(GoogleTest)

function(skb_add_unit_test name)
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name} PROPERTIES LABELS unit DISCOVERY_MODE PRE_TEST)
endfunction()

function(skb_add_testbed_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "LIBS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main)
  # Testbed tests share one real cluster: run them one at a time (RESOURCE_LOCK).
  gtest_discover_tests(${name} PROPERTIES LABELS ${ARG_LABEL} RESOURCE_LOCK testbed
                       TIMEOUT ${ARG_TIMEOUT} DISCOVERY_MODE PRE_TEST)
endfunction()
