# The scheduler's include check (scheduler/layers.cmake) run on temporary
# trees: a clean one passes, and each upward include fails it, naming the
# file. Run by ctest as
#   cmake -DLAYERS=<scheduler/layers.cmake> -DWORK=<scratch dir> -P this file.

# write_tree makes a tree at `root` whose folders include only what they may.
function(write_tree root)
  file(REMOVE_RECURSE ${root})
  file(WRITE ${root}/scheduler/records.h "#include <string>\n")
  file(WRITE ${root}/scheduler/space/space.h
       "#include \"scheduler/space/schedule.h\"\n")
  file(WRITE ${root}/scheduler/stats/verdicts.h
       "#include \"scheduler/stats/statistics.h\"\n"
       "#include \"scheduler/records.h\"\n")
  file(WRITE ${root}/scheduler/analysis/ranking.h
       "#include \"scheduler/stats/verdicts.h\"\n"
       "#include \"scheduler/space/space.h\"\n")
  file(WRITE ${root}/scheduler/strategy/asha.cc
       "#include \"scheduler/analysis/ranking.h\"\n")
  file(WRITE ${root}/scheduler/simulate/known_truth.cc
       "#include \"scheduler/strategy/asha.h\"\n")
  file(WRITE ${root}/storage/store.h "#include \"scheduler/records.h\"\n")
  file(WRITE ${root}/server/results.cc
       "#include \"scheduler/analysis/ranking.h\"\n")
endfunction()

# check runs the check on `root`; sets `rc` and `out` in the caller.
function(check root)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -DPRISM_LAYERS_ROOT=${root} -P ${LAYERS}
    RESULT_VARIABLE result OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  set(rc ${result} PARENT_SCOPE)
  # CMake wraps its messages: compare with the line breaks taken out.
  string(REGEX REPLACE "[ \t\n]+" " " joined "${stdout}${stderr}")
  set(out "${joined}" PARENT_SCOPE)
endfunction()

set(root ${WORK}/tree)
write_tree(${root})
check(${root})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the clean tree failed the check:\n${out}")
endif()

# Each case: a file and the include that breaks the layering.
set(cases
  "scheduler/space/space.h|scheduler/stats/statistics.h"
  "scheduler/stats/verdicts.h|scheduler/analysis/ranking.h"
  "scheduler/analysis/ranking.h|scheduler/strategy/asha.h"
  "scheduler/strategy/asha.cc|scheduler/simulate/known_truth.h"
  "scheduler/records.h|scheduler/space/schedule.h"
  "storage/store.h|scheduler/analysis/ranking.h"
  "server/results.cc|scheduler/simulate/known_truth.h")
foreach(case ${cases})
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 file)
  list(GET parts 1 include)
  write_tree(${root})
  file(APPEND ${root}/${file} "#include \"${include}\"\n")
  check(${root})
  if(rc EQUAL 0)
    message(FATAL_ERROR "${file} including ${include} passed the check")
  endif()
  if(NOT out MATCHES "${file}: includes ${include}")
    message(FATAL_ERROR "${file} including ${include}: the failure does not "
                        "name it:\n${out}")
  endif()
endforeach()
file(REMOVE_RECURSE ${root})
list(LENGTH cases count)
message(STATUS "layers: the clean tree passes, ${count} upward includes fail")
