# The coordinator's include layering, checked at configure time
# (server/CMakeLists.txt) and by tests/server/layers_test.cmake. From
# server/, each folder may include only:
#   core/infra/        core/infra/
#   core/auth/         core/auth/, core/infra/
#   core/queue/        core/queue/, core/auth/, core/infra/
#   core/experiments/  core/experiments/, core/queue/, core/auth/,
#                      core/infra/
#   rpc/               core/, rpc/ (not http/, not coordinator.h)
#   http/              core/, http/ (not rpc/, not coordinator.h)
# and storage/ includes nothing from server/. coordinator.{h,cc} wires them
# all. The libraries' links enforce the same (server/core/CMakeLists.txt:
# each domain links only the domains below it).
#
# As a script: cmake -DPRISM_LAYERS_ROOT=<a source tree> -P layers.cmake
# checks that tree and fails (FATAL_ERROR) on the first folder that breaks
# the layering.

include(${CMAKE_CURRENT_LIST_DIR}/../cmake/check_includes.cmake)

# prism_check_server_layers checks the layering above in the source tree at
# ROOT.
function(prism_check_server_layers root)
  set(s "server/")
  set(c "server/core/")
  set(w "server/layers.cmake")
  prism_check_includes(WHERE ${w} DIR ${root}/${c}infra PREFIX ${s}
    ALLOW "${c}infra/"
    RULE "core/infra/ includes nothing else from server/")
  prism_check_includes(WHERE ${w} DIR ${root}/${c}auth PREFIX ${s}
    ALLOW "${c}auth/" "${c}infra/"
    RULE "core/auth/ may include core/infra/ only")
  prism_check_includes(WHERE ${w} DIR ${root}/${c}queue PREFIX ${s}
    ALLOW "${c}queue/" "${c}auth/" "${c}infra/"
    RULE "core/queue/ may include core/auth/ and core/infra/ only")
  prism_check_includes(WHERE ${w} DIR ${root}/${c}experiments PREFIX ${s}
    ALLOW "${c}experiments/" "${c}queue/" "${c}auth/" "${c}infra/"
    RULE "core/experiments/ may include the other core/ domains only")
  prism_check_includes(WHERE ${w} DIR ${root}/${s}rpc PREFIX ${s}
    ALLOW "${s}rpc/" "${c}"
    RULE "rpc/ may include core/ only (not http/, not the coordinator)")
  prism_check_includes(WHERE ${w} DIR ${root}/${s}http PREFIX ${s}
    ALLOW "${s}http/" "${c}"
    RULE "http/ may include core/ only (not rpc/, not the coordinator)")
  prism_check_includes(WHERE ${w} DIR ${root}/storage PREFIX ${s}
    RULE "storage/ includes nothing from server/")
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT PRISM_LAYERS_ROOT)
    message(FATAL_ERROR "usage: cmake -DPRISM_LAYERS_ROOT=<tree> -P "
                        "layers.cmake")
  endif()
  prism_check_server_layers(${PRISM_LAYERS_ROOT})
endif()
