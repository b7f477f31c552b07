# SPDX-License-Identifier: Apache-2.0
# Warning, hardening and sanitizer flags applied to every target of this project.
# Third-party headers come in as SYSTEM includes, so -Werror judges our code only.

add_compile_options(-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                    -Wno-missing-field-initializers)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_compile_options(-Wthread-safety)
endif()
if(SKB_WERROR)
  add_compile_options(-Werror)
endif()

# Hardening (Debian's defaults plus what the Slurm plugin guide asks for).
add_compile_options(-fstack-protector-strong)
if(NOT SKB_SANITIZE)
  add_compile_definitions($<$<NOT:$<CONFIG:Debug>>:_FORTIFY_SOURCE=2>)
endif()
add_link_options(-Wl,-z,relro,-z,now)

if(SKB_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Fuzz builds (clang): every library gets coverage instrumentation and the sanitizers, so
# libFuzzer is guided by the code under test, not only by the fuzz entry point. The fuzz
# executables add -fsanitize=fuzzer (libFuzzer's main) themselves.
if(SKB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SKB_FUZZ=ON needs clang (CC=clang CXX=clang++)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
