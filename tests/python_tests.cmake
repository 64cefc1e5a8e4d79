# Which python3 runs the pytest-based tests (the sk command line's, and in sanitizer builds the
# binding's), and the environment it needs to load this build's libsk. Included once by
# tests/CMakeLists.txt, for tests/cli and tests/python; sets:
#   SK_TEST_PYTHON         a python3 with pytest, or empty (the tests are then left out, loudly)
#   SK_TEST_PYTHON_ENV     ctest ENVIRONMENT entries python needs to load this libsk
#   SK_TEST_PYTHON_SKIP    why python cannot load this build's libsk at all (empty when it can)
#
# A host python cannot load a cross-built libsk (the aarch64 suite runs under qemu). A sanitized
# libsk needs its sanitizer runtime loaded first in the process, which python was not linked
# with: under GCC's AddressSanitizer it is preloaded (LD_PRELOAD), with leak detection off, as
# the interpreter leaves its own objects at exit (the C tests check libsk's leaks). ThreadSanitizer
# cannot be preloaded into a running interpreter's threads, and clang links its runtimes into
# executables only: those builds leave the python tests out.
set(SK_TEST_PYTHON "")
set(SK_TEST_PYTHON_ENV "")
set(SK_TEST_PYTHON_SKIP "")
if(CMAKE_CROSSCOMPILING)
  set(SK_TEST_PYTHON_SKIP "a host python cannot load a cross-built libsk")
elseif(SK_SANITIZE)
  if(NOT SK_SANITIZE MATCHES "address" OR SK_SANITIZE MATCHES "thread"
     OR NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
    set(SK_TEST_PYTHON_SKIP "python cannot load a libsk built with -fsanitize=${SK_SANITIZE} by ${CMAKE_C_COMPILER_ID}")
  else()
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                    OUTPUT_VARIABLE sk_asan_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT IS_ABSOLUTE "${sk_asan_runtime}" OR NOT EXISTS "${sk_asan_runtime}")
      set(SK_TEST_PYTHON_SKIP "${CMAKE_C_COMPILER} does not say where libasan.so is")
    else()
      set(SK_TEST_PYTHON_ENV "LD_PRELOAD=${sk_asan_runtime};ASAN_OPTIONS=detect_leaks=0"
                             "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
    endif()
  endif()
endif()

if(NOT SK_TEST_PYTHON_SKIP)
  sk_python_with(SK_TEST_PYTHON pytest)
endif()
if(SK_TEST_PYTHON_SKIP)
  message(STATUS "the sk command-line and Python tests are left out: ${SK_TEST_PYTHON_SKIP}")
endif()
