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

# prism_check_includes fails when a C++ file under DIR (recursively; with
# TOP_ONLY, DIR's own files only) includes a "PREFIX..." header that matches
# none of the ALLOW regular expressions; RULE says what the folder may
# include.
function(prism_check_includes)
  cmake_parse_arguments(ARG "TOP_ONLY" "DIR;PREFIX;RULE" "ALLOW" ${ARGN})
  set(glob GLOB_RECURSE)
  if(ARG_TOP_ONLY)
    set(glob GLOB)
  endif()
  set(depends)
  if(NOT CMAKE_SCRIPT_MODE_FILE)
    set(depends CONFIGURE_DEPENDS)
  endif()
  file(${glob} files ${depends} ${ARG_DIR}/*.h ${ARG_DIR}/*.cc)
  foreach(file ${files})
    file(STRINGS ${file} lines
         REGEX "^[ \t]*#[ \t]*include[ \t]*\"${ARG_PREFIX}")
    foreach(line ${lines})
      string(REGEX REPLACE "^[^\"]*\"([^\"]*)\".*$" "\\1" included "${line}")
      set(allowed FALSE)
      foreach(pattern ${ARG_ALLOW})
        if(included MATCHES "^${pattern}")
          set(allowed TRUE)
        endif()
      endforeach()
      if(NOT allowed)
        message(FATAL_ERROR "${file}: includes ${included}: ${ARG_RULE} "
                            "(the layering is in scheduler/layers.cmake)")
      endif()
    endforeach()
  endforeach()
endfunction()

# prism_check_scheduler_layers checks the layering above in the source tree
# at ROOT.
function(prism_check_scheduler_layers root)
  set(s "scheduler/")
  prism_check_includes(DIR ${root}/scheduler TOP_ONLY PREFIX ${s}
    RULE "scheduler/records.h includes nothing from scheduler/")
  prism_check_includes(DIR ${root}/scheduler/space PREFIX ${s}
    ALLOW "${s}space/"
    RULE "space/ includes nothing else from scheduler/")
  prism_check_includes(DIR ${root}/scheduler/stats PREFIX ${s}
    ALLOW "${s}stats/" "${s}space/" "${s}records\\.h$"
    RULE "stats/ may include space/ and records.h only")
  prism_check_includes(DIR ${root}/scheduler/analysis PREFIX ${s}
    ALLOW "${s}analysis/" "${s}stats/" "${s}space/" "${s}records\\.h$"
    RULE "analysis/ may include stats/, space/ and records.h only")
  prism_check_includes(DIR ${root}/scheduler/strategy PREFIX ${s}
    ALLOW "${s}strategy/" "${s}analysis/" "${s}stats/" "${s}space/"
          "${s}records\\.h$"
    RULE "strategy/ may include analysis/, stats/, space/ and records.h only")
  prism_check_includes(DIR ${root}/storage PREFIX ${s}
    ALLOW "${s}records\\.h$"
    RULE "storage/ may include scheduler/records.h only")
  foreach(production cli server worker model)
    prism_check_includes(DIR ${root}/${production} PREFIX "${s}simulate/"
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
