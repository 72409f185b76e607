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

include(${CMAKE_CURRENT_LIST_DIR}/../testing/layers_cases.cmake)

# Each case: a file and the include that breaks the layering.
set(cases
  "scheduler/space/space.h|scheduler/stats/statistics.h"
  "scheduler/stats/verdicts.h|scheduler/analysis/ranking.h"
  "scheduler/analysis/ranking.h|scheduler/strategy/asha.h"
  "scheduler/strategy/asha.cc|scheduler/simulate/known_truth.h"
  "scheduler/records.h|scheduler/space/schedule.h"
  "storage/store.h|scheduler/analysis/ranking.h"
  "server/results.cc|scheduler/simulate/known_truth.h")
layers_cases(write_tree ${cases})
