# C++ objects as g++ and clang++ write them by default (exceptions, RTTI): the cxx_*.cpp sources,
# compiled in the matrix above. Here, what the matrix does not give (included by CMakeLists.txt):
#   <variant>/cxx_lifecycle.so  for the -pic variants: the same object linked by `gcc -shared`,
#                               which the tests dlopen for the order a normal link gives;
#   <cc>-O0-coverage/cxx_lifecycle.o  built with --coverage (refused at load, naming libgcov).
set(SK_CXX_REFERENCE_SOURCES cxx_lifecycle)
foreach(name ${SK_CXX_REFERENCE_SOURCES})
  foreach(variant ${SK_KERNEL_VARIANTS})
    if(NOT variant MATCHES "-pic$")
      continue()
    endif()
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/${variant}/${name}.o)
    set(so ${CMAKE_CURRENT_BINARY_DIR}/${variant}/${name}.so)
    add_custom_command(OUTPUT ${so} COMMAND ${SK_GCC} -shared ${obj} -o ${so} DEPENDS ${obj}
                       COMMENT "reference ${variant}/${name}.so" VERBATIM)
    list(APPEND SK_KERNEL_OBJECTS ${so})
  endforeach()
  foreach(cc ${SK_KERNEL_COMPILERS})
    if(cc STREQUAL "gcc")
      set(compiler ${SK_GCC})
    else()
      set(compiler ${SK_CLANG} ${SK_CLANG_FLAGS})
    endif()
    set(dir ${CMAKE_CURRENT_BINARY_DIR}/${cc}-O0-coverage)
    add_custom_command(OUTPUT ${dir}/${name}.o
                       COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
                       COMMAND ${compiler} -O0 -g0 -Wall -Werror -fPIC --coverage -x c++ -std=c++17
                               -I${PROJECT_SOURCE_DIR}/include -c ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp
                               -o ${dir}/${name}.o
                       DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp ${PROJECT_SOURCE_DIR}/include/sk_kernel.h
                       COMMENT "kernel ${cc}-O0-coverage/${name}.o" VERBATIM)
    list(APPEND SK_KERNEL_OBJECTS ${dir}/${name}.o)
  endforeach()
endforeach()
