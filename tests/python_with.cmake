# sk_python_with(OUT MODULE): OUT is a python3 that imports MODULE, or empty. Debian's
# /usr/bin/python3 comes first: the test modules (pytest, numpy, jsonschema) are its packages
# (scripts/deps), while another python3 first on PATH may lack them.
function(sk_python_with out module)
  find_program(SK_SYSTEM_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
  find_program(SK_PATH_PYTHON3 NAMES python3)
  set(${out} "" PARENT_SCOPE)
  foreach(python IN ITEMS ${SK_SYSTEM_PYTHON3} ${SK_PATH_PYTHON3})
    execute_process(COMMAND ${python} -c "import ${module}" RESULT_VARIABLE missing
                    OUTPUT_QUIET ERROR_QUIET)
    if(NOT missing)
      set(${out} ${python} PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()
