# CUDA backend tests (tests/cpp/cuda/test_cuda_*.cpp), built when nvcc compiled the CUDA test kernels
# (tests/kernels/cuda). GPU tests skip, with the reason, on machines without a CUDA device.
if(NOT SK_CUDA_TESTS)
  return()
endif()
file(GLOB SK_CUDA_TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cuda/test_cuda_*.cpp)
add_executable(sk_cuda_tests ${SK_CUDA_TEST_SOURCES})
target_include_directories(sk_cuda_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(sk_cuda_tests PRIVATE sk_internal GTest::gtest_main sk_explain_dump ${CMAKE_DL_LIBS})
# nvdisasm reads the linked SASS, cuobjdump its resource usage, where they are installed: the
# toolkit, or NVIDIA's PyPI wheels in SK_CUDA_TOOLS_DIR, where scripts/deps puts them (or point
# SK_NVDISASM / SK_CUOBJDUMP at them); those checks skip without them.
get_filename_component(SK_PTXAS_DIR ${SK_PTXAS} DIRECTORY)
if(DEFINED ENV{SK_CUDA_TOOLS_DIR})
  set(sk_cuda_tools $ENV{SK_CUDA_TOOLS_DIR})
elseif(DEFINED ENV{XDG_DATA_HOME})
  set(sk_cuda_tools $ENV{XDG_DATA_HOME}/libsk/cuda-tools)
else()
  set(sk_cuda_tools $ENV{HOME}/.local/share/libsk/cuda-tools)
endif()
foreach(tool nvdisasm cuobjdump)
  string(TOUPPER ${tool} var)
  find_program(SK_${var} ${tool} HINTS ${SK_PTXAS_DIR} ${sk_cuda_tools}/nvidia/cu13/bin ENV CUDA_HOME PATH_SUFFIXES bin)
  if(NOT SK_${var})
    set(SK_${var} "")
  endif()
endforeach()
# The Triton kernels' PTX is checked in (tests/kernels/triton: Triton is no build dependency).
target_compile_definitions(sk_cuda_tests PRIVATE SK_CUDA_KERNEL_DIR="${SK_CUDA_KERNEL_DIR}" SK_PTXAS="${SK_PTXAS}"
                           SK_NVDISASM="${SK_NVDISASM}"
                           SK_TRITON_PTX_DIR="${PROJECT_SOURCE_DIR}/tests/kernels/triton/ptx")
# cuda.h only for test_cuda_abi.cpp's layout checks (libsk itself needs no CUDA header).
get_filename_component(SK_CUDA_BIN_DIR ${SK_NVCC} DIRECTORY)
if(EXISTS ${SK_CUDA_BIN_DIR}/../include/cuda.h)
  target_include_directories(sk_cuda_tests SYSTEM PRIVATE ${SK_CUDA_BIN_DIR}/../include)
endif()
add_dependencies(sk_cuda_tests sk_cuda_test_kernels)
# LeakSanitizer for the CUDA tests: nvJitLink's suppressions, and no tracking of dynamic TLS
# (__tls_get_addr): GCC 12's leak check crashed reading the dynamic TLS of the dlopened
# nvJitLink ("Tracer caught signal 11"), in a process whose layout (the test binary's path, its
# arguments) decides whether it does.
set(sk_cuda_lsan "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/lsan-cuda.supp:intercept_tls_get_addr=0")
gtest_discover_tests(sk_cuda_tests DISCOVERY_TIMEOUT 60 DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300 LABELS cuda
                     ENVIRONMENT "${sk_cuda_lsan}" ${SK_EXPLAIN_COLLECT})

# What a device run loaded (scripts/gpu-check prints it first; scripts/device-bundle ships it).
add_executable(sk_cuda_info ${CMAKE_CURRENT_SOURCE_DIR}/cuda/cuda_info.cpp)
target_link_libraries(sk_cuda_info PRIVATE sk_internal)

# The launch path against a stand-in driver (no GPU needed): fake_cuda_driver.cpp as a shared
# library that the tests load through SK_CUDA_DRIVER_LIBRARY, in a process of their own.
add_library(sk_fake_cuda_driver SHARED ${CMAKE_CURRENT_SOURCE_DIR}/cuda/fake_cuda_driver.cpp)
# Types only (cuda/driver_api.hpp's mirror of cuda.h): nothing of libsk is linked in.
target_include_directories(sk_fake_cuda_driver PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_features(sk_fake_cuda_driver PRIVATE cxx_std_20)
# PTX given to cuModuleLoadDataEx is compiled by ptxas, as the driver's JIT would compile it.
target_compile_definitions(sk_fake_cuda_driver PRIVATE SK_PTXAS="${SK_PTXAS}")
add_executable(sk_cuda_fake_driver_tests ${CMAKE_CURRENT_SOURCE_DIR}/cuda/cuda_fake_driver_tests.cpp)
# The device ABI's constants (cuda/entry_ptx.hpp), header-only: the tests link libsk's public ABI.
target_include_directories(sk_cuda_fake_driver_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(sk_cuda_fake_driver_tests PRIVATE sk GTest::gtest_main ${CMAKE_DL_LIBS} sk_explain_dump)
target_compile_features(sk_cuda_fake_driver_tests PRIVATE cxx_std_20)
target_compile_definitions(sk_cuda_fake_driver_tests PRIVATE SK_CUDA_KERNEL_DIR="${SK_CUDA_KERNEL_DIR}"
                           SK_TRITON_PTX_DIR="${PROJECT_SOURCE_DIR}/tests/kernels/triton/ptx"
                           SK_CUOBJDUMP="${SK_CUOBJDUMP}"
                           SK_FAKE_CUDA_DRIVER="$<TARGET_FILE:sk_fake_cuda_driver>")
add_dependencies(sk_cuda_fake_driver_tests sk_cuda_test_kernels sk_fake_cuda_driver)
gtest_discover_tests(sk_cuda_fake_driver_tests DISCOVERY_TIMEOUT 60 DISCOVERY_MODE PRE_TEST PROPERTIES TIMEOUT 300
                     LABELS cuda ENVIRONMENT "${sk_cuda_lsan}" ${SK_EXPLAIN_COLLECT})
