// coordinator_bench lease: Lease -> task latency, in process and over
// loopback gRPC (scenarios.h).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "bench/coordinator/harness.h"
#include "bench/coordinator/scenarios.h"
#include "prism/v1/prism.grpc.pb.h"
#include "server/coordinator.h"

namespace prism::bench {

int Lease(int leases) {
  TempDir dir;
  std::unique_ptr<server::Coordinator> c =
      StartCoordinator(dir.File("prism.db"));
  for (const char* user : {"alice", "bob", "carol"}) {
    SubmitTiny(c.get(), user, 20);  // 420 trials
    SubmitTiny(c.get(), user, 20);
  }
  const std::string worker_token = Token(c.get(), "farm", v1::ROLE_WORKER);
  const server::Caller worker{"farm", v1::ROLE_WORKER};
  v1::RegisterRequest reg_req;
  absl::StatusOr<v1::RegisterResponse> reg =
      c->queue()->Register(worker, reg_req);
  v1::LeaseRequest req;
  req.set_worker_id(reg->worker_id());

  // StartOf is the Start a worker sends once its trainer runs: untimed, it
  // moves the trial to running, so the next Lease is a new one rather than
  // the same lease delivered again.
  auto start_of = [&](const v1::TrialTask& task) {
    v1::StartRequest start;
    start.set_worker_id(req.worker_id());
    start.set_trial_id(task.trial().id());
    start.set_attempt(task.trial().attempt());
    return start;
  };
  std::vector<double> in_process;
  for (int i = 0; i < leases; ++i) {
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<v1::LeaseResponse> r = c->queue()->Lease(worker, req);
    in_process.push_back(Ms(Clock::now() - t0));
    if (!r.ok() || !r->has_task() ||
        !c->queue()->Start(worker, start_of(r->task())).ok()) {
      std::cerr << "lease " << i << " got no task\n";
      return 1;
    }
  }
  auto stub = v1::WorkerService::NewStub(NewChannel(c->grpc_address(), 0));
  std::vector<double> rpc;
  for (int i = 0; i < 400; ++i) {
    v1::LeaseResponse resp;
    const Clock::time_point t0 = Clock::now();
    grpc::Status s = stub->Lease(Ctx(worker_token).get(), req, &resp);
    rpc.push_back(Ms(Clock::now() - t0));
    v1::StartResponse started;
    if (s.ok() && resp.has_task()) {
      s = stub->Start(Ctx(worker_token).get(), start_of(resp.task()), &started);
    }
    if (!s.ok() || !resp.has_task()) {
      std::cerr << "rpc lease " << i << " failed: " << s.error_message()
                << "\n";
      return 1;
    }
  }
  std::cout << "lease -> task at the coordinator (QueueManager::Lease), 2,520 "
               "queued trials, "
               "6 experiments, 3 users:\n  "
            << Summary(in_process) << "\n";
  std::cout << "lease -> task over loopback gRPC (client round trip):\n  "
            << Summary(rpc) << "\n";
  return 0;
}

}  // namespace prism::bench
