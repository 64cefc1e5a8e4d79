# tests/kernels/rust: sk_rust_kernels.rs built by rustc as a staticlib with std (what the test
# loads) and as a cdylib (what it compares with), into <build>/tests/kernels/rust/. Only where
# rustc builds for the kernels' target (a cross build needs the target's std); otherwise
# SK_RUST_MISSING says why and the test skips with that message.
find_program(SK_RUSTC NAMES rustc)
set(SK_RUST_DIR ${CMAKE_CURRENT_BINARY_DIR}/rust)
set(SK_RUST_MISSING "")
set(sk_rust_flags -O --edition=2021)
if(SK_KERNEL_TARGET)
  string(REGEX REPLACE "^([^-]+)-linux-gnu$" "\\1-unknown-linux-gnu" sk_rust_target ${SK_KERNEL_TARGET})
  list(APPEND sk_rust_flags --target=${sk_rust_target} -C linker=${SK_GCC})
endif()
# The rustc on PATH, then Debian's (a toolchain manager's rustc on PATH may lack the cross
# target's std, which scripts/deps installs for Debian's as libstd-rust-dev:arm64).
set(sk_rustc_candidates ${SK_RUSTC})
if(EXISTS /usr/bin/rustc)
  list(APPEND sk_rustc_candidates /usr/bin/rustc)
endif()
list(REMOVE_DUPLICATES sk_rustc_candidates)
set(sk_rustc "")
if(NOT sk_rustc_candidates)
  set(SK_RUST_MISSING "rustc was not found (scripts/deps installs Debian's rustc)")
else()
  # A probe: can this rustc build a staticlib and a cdylib with std for the target?
  set(probe_dir ${CMAKE_CURRENT_BINARY_DIR}/rust-probe)
  file(MAKE_DIRECTORY ${probe_dir})
  file(WRITE ${probe_dir}/probe.rs "#[no_mangle]\npub extern \"C\" fn probe() -> usize { std::env::args().count() }\n")
  foreach(candidate IN LISTS sk_rustc_candidates)
    execute_process(COMMAND ${candidate} ${sk_rust_flags} --crate-type=staticlib --crate-type=cdylib
                            --crate-name probe ${probe_dir}/probe.rs --out-dir ${probe_dir}
                    RESULT_VARIABLE probe_result ERROR_VARIABLE probe_error OUTPUT_QUIET)
    if(probe_result EQUAL 0)
      set(sk_rustc ${candidate})
      break()
    endif()
    if(SK_RUST_MISSING STREQUAL "")  # the first candidate's reason
      # rustc's first line, fit for a C string literal in a compile definition.
      string(REGEX REPLACE "\n.*" "" probe_error "${probe_error}")
      string(REGEX REPLACE "[\"'`;\\]" "" probe_error "${probe_error}")
      string(JOIN " " flags_text ${sk_rust_flags})
      set(SK_RUST_MISSING "${candidate} cannot build for this target (${flags_text}): ${probe_error}")
    endif()
  endforeach()
  if(sk_rustc)
    set(SK_RUST_MISSING "")
  endif()
endif()
if(SK_RUST_MISSING STREQUAL "")
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/rust/sk_rust_kernels.rs)
  add_custom_command(OUTPUT ${SK_RUST_DIR}/libsk_rust_kernels.a ${SK_RUST_DIR}/libsk_rust_kernels.so
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${SK_RUST_DIR}
                     COMMAND ${CMAKE_COMMAND} -E env --unset=MAKEFLAGS --unset=MFLAGS ${sk_rustc} ${sk_rust_flags}
                             --crate-type=staticlib --crate-type=cdylib
                             --crate-name sk_rust_kernels ${src} --out-dir ${SK_RUST_DIR}
                     DEPENDS ${src} COMMENT "rust staticlib and cdylib sk_rust_kernels" VERBATIM)
  list(APPEND SK_KERNEL_OBJECTS ${SK_RUST_DIR}/libsk_rust_kernels.a ${SK_RUST_DIR}/libsk_rust_kernels.so)
  message(STATUS "Rust kernels: built by ${sk_rustc}")
else()
  message(STATUS "Rust kernels: ${SK_RUST_MISSING}")
endif()
set(SK_RUST_DIR ${SK_RUST_DIR} PARENT_SCOPE)
set(SK_RUST_MISSING "${SK_RUST_MISSING}" PARENT_SCOPE)
