# What tests/scheduler/layers_test.cmake and tests/server/layers_test.cmake
# share: run a layering check (a layers.cmake in script mode) on temporary
# trees, the clean tree first, then once per upward include.

# layers_check runs LAYERS on the tree at `root`; sets `rc` and `out` in the
# caller.
function(layers_check root)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -DPRISM_LAYERS_ROOT=${root} -P ${LAYERS}
    RESULT_VARIABLE result OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  set(rc ${result} PARENT_SCOPE)
  # CMake wraps its messages: compare with the line breaks taken out.
  string(REGEX REPLACE "[ \t\n]+" " " joined "${stdout}${stderr}")
  set(out "${joined}" PARENT_SCOPE)
endfunction()

# layers_cases checks that the tree `write_tree` (a function of the root)
# writes passes, and that each case "file|include" (the file including that
# header on top of the clean tree) fails, naming the file and the include.
function(layers_cases write_tree)
  set(root ${WORK}/tree)
  cmake_language(CALL ${write_tree} ${root})
  layers_check(${root})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the clean tree failed the check:\n${out}")
  endif()
  foreach(case ${ARGN})
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 file)
    list(GET parts 1 include)
    cmake_language(CALL ${write_tree} ${root})
    file(APPEND ${root}/${file} "#include \"${include}\"\n")
    layers_check(${root})
    if(rc EQUAL 0)
      message(FATAL_ERROR "${file} including ${include} passed the check")
    endif()
    if(NOT out MATCHES "${file}: includes ${include}")
      message(FATAL_ERROR "${file} including ${include}: the failure does "
                          "not name it:\n${out}")
    endif()
  endforeach()
  file(REMOVE_RECURSE ${root})
  list(LENGTH ARGN count)
  message(STATUS "layers: the clean tree passes, ${count} upward includes "
                 "fail")
endfunction()
