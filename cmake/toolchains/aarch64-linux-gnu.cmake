# Cross-compiling libsk for 64-bit Arm Linux on a Debian host, with the tests run under qemu-user:
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# Needs gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, qemu-user and the :arm64 -dev packages
# (scripts/deps --arch aarch64 installs them). Test kernels are compiled by the cross gcc and by
# clang --target=aarch64-linux-gnu (tests/kernels/CMakeLists.txt reads SK_KERNEL_TARGET).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(SK_KERNEL_TARGET aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${SK_KERNEL_TARGET}-gcc)
set(CMAKE_CXX_COMPILER ${SK_KERNEL_TARGET}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${SK_KERNEL_TARGET})
# ctest and gtest discovery run every test binary through this. The binaries run on the :arm64
# multiarch runtime (libc6:arm64, libstdc++6:arm64: /lib/ld-linux-aarch64.so.1 and
# /lib/aarch64-linux-gnu), the one the :arm64 -dev libraries come with. Not `-L
# /usr/aarch64-linux-gnu`: its loader would load the multiarch libc.so.6 of another glibc build,
# and the mix hangs in pthread_create.
if(EXISTS /lib/ld-linux-aarch64.so.1)
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/${SK_KERNEL_TARGET})
endif()
# Debian multiarch: the :arm64 libraries live beside the host's, under /usr/lib/aarch64-linux-gnu.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${SK_KERNEL_TARGET}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
