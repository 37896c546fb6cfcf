# Builds each layering probe (tests/cpp/layering/CMakeLists.txt) and checks the result:
# `name=OK` must compile; `name=volley/x/y.h` must fail because y.h is not found.
# usage: cmake -DBUILD_DIR=<build> -DPROBES=name=expected,... -P check_probes.cmake
set(failures "")
string(REPLACE "," ";" PROBES "${PROBES}")
foreach(probe IN LISTS PROBES)
  string(REPLACE "=" ";" parts "${probe}")
  list(GET parts 0 target)
  list(GET parts 1 expected)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${target}
                  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(expected STREQUAL "OK")
    if(status EQUAL 0)
      message(STATUS "${target}: compiles, as it must")
    else()
      string(APPEND failures "${target} must compile but failed:\n${output}\n")
    endif()
  else()
    string(REPLACE "." "\\." pattern "${expected}")
    if(status EQUAL 0)
      string(APPEND failures "${target} reached ${expected}, which must not be reachable\n")
    elseif(NOT output MATCHES "${pattern}: No such file or directory"
           AND NOT output MATCHES "'${pattern}' file not found")  # gcc's message, clang's
      string(APPEND failures "${target} failed, but not for want of ${expected}:\n${output}\n")
    else()
      message(STATUS "${target}: ${expected} not found, as it must be")
    endif()
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures}")
endif()
