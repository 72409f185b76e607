# The scheduler's include layering, checked at configure time
# (scheduler/CMakeLists.txt) and by tests/scheduler/layers_test.cmake:
#   space/     includes nothing else from scheduler/
#   stats/     space/ and records.h
#   analysis/  stats/, space/ and records.h
#   strategy/  analysis/, stats/, space/ and records.h
#   simulate/  all of scheduler/
#   records.h  nothing from scheduler/
# and outside it: storage/ includes only scheduler/records.h (record types,
# no search logic), and the production folders (cli/, server/, worker/,
# model/, storage/) never include scheduler/simulate/.
#
# As a script: cmake -DPRISM_LAYERS_ROOT=<a source tree> -P layers.cmake
# checks that tree and fails (FATAL_ERROR) on the first folder that breaks
# the layering.

include(${CMAKE_CURRENT_LIST_DIR}/../cmake/check_includes.cmake)

# prism_check_scheduler_layers checks the layering above in the source tree
# at ROOT.
function(prism_check_scheduler_layers root)
  set(s "scheduler/")
  set(w "scheduler/layers.cmake")
  prism_check_includes(WHERE ${w} DIR ${root}/scheduler TOP_ONLY PREFIX ${s}
    RULE "scheduler/records.h includes nothing from scheduler/")
  prism_check_includes(WHERE ${w} DIR ${root}/scheduler/space PREFIX ${s}
    ALLOW "${s}space/"
    RULE "space/ includes nothing else from scheduler/")
  prism_check_includes(WHERE ${w} DIR ${root}/scheduler/stats PREFIX ${s}
    ALLOW "${s}stats/" "${s}space/" "${s}records\\.h$"
    RULE "stats/ may include space/ and records.h only")
  prism_check_includes(WHERE ${w} DIR ${root}/scheduler/analysis PREFIX ${s}
    ALLOW "${s}analysis/" "${s}stats/" "${s}space/" "${s}records\\.h$"
    RULE "analysis/ may include stats/, space/ and records.h only")
  prism_check_includes(WHERE ${w} DIR ${root}/scheduler/strategy PREFIX ${s}
    ALLOW "${s}strategy/" "${s}analysis/" "${s}stats/" "${s}space/"
          "${s}records\\.h$"
    RULE "strategy/ may include analysis/, stats/, space/ and records.h only")
  prism_check_includes(WHERE ${w} DIR ${root}/storage PREFIX ${s}
    ALLOW "${s}records\\.h$"
    RULE "storage/ may include scheduler/records.h only")
  foreach(production cli server worker model)
    prism_check_includes(WHERE ${w} DIR ${root}/${production}
      PREFIX "${s}simulate/"
      RULE "${production}/ is production code (simulate/ is for tests)")
  endforeach()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT PRISM_LAYERS_ROOT)
    message(FATAL_ERROR "usage: cmake -DPRISM_LAYERS_ROOT=<tree> -P "
                        "layers.cmake")
  endif()
  prism_check_scheduler_layers(${PRISM_LAYERS_ROOT})
endif()
