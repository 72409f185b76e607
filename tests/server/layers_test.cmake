# The coordinator's include check (server/layers.cmake) run on temporary
# trees: a clean one passes, and each upward include fails it, naming the
# file. Run by ctest as
#   cmake -DLAYERS=<server/layers.cmake> -DWORK=<scratch dir> -P this file.

# write_tree makes a tree at `root` whose folders include only what they may.
function(write_tree root)
  file(REMOVE_RECURSE ${root})
  set(c "server/core")
  file(WRITE ${root}/${c}/infra/events.h "#include <string>\n")
  file(WRITE ${root}/${c}/auth/auth.h
       "#include \"${c}/infra/clock.h\"\n")
  file(WRITE ${root}/${c}/queue/queue.h
       "#include \"${c}/auth/auth.h\"\n"
       "#include \"${c}/infra/events.h\"\n")
  file(WRITE ${root}/${c}/experiments/experiments.h
       "#include \"${c}/queue/queue.h\"\n")
  file(WRITE ${root}/server/rpc/experiment_service.h
       "#include \"${c}/experiments/experiments.h\"\n")
  file(WRITE ${root}/server/http/http_server.h
       "#include \"${c}/queue/queue.h\"\n")
  file(WRITE ${root}/server/coordinator.h
       "#include \"server/rpc/experiment_service.h\"\n"
       "#include \"server/http/http_server.h\"\n")
  file(WRITE ${root}/storage/store.h "#include \"scheduler/records.h\"\n")
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/../testing/layers_cases.cmake)

# Each case: a file and the include that breaks the layering.
set(c "server/core")
set(cases
  "${c}/infra/events.h|${c}/auth/auth.h"
  "${c}/auth/auth.h|${c}/queue/queue.h"
  "${c}/queue/queue.h|${c}/experiments/limits.h"
  "${c}/experiments/experiments.h|server/rpc/grpc_edge.h"
  "${c}/experiments/experiments.h|server/coordinator.h"
  "server/rpc/experiment_service.h|server/http/http_api.h"
  "server/http/http_server.h|server/rpc/grpc_edge.h"
  "server/http/http_server.h|server/coordinator.h"
  "storage/store.h|${c}/infra/clock.h")
layers_cases(write_tree ${cases})
