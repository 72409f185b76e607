// grpc_unknown_methods: a test and bench helper that calls made-up gRPC
// methods without a token, in a process of its own so that the caller can
// measure the coordinator's memory apart from the client's (issue #40).
//
//   grpc_unknown_methods HOST:PORT CHANNELS CALLS NAME_BYTES
//
// Sends CALLS unary calls, each to a method of its own
// ("/made.up.Service/<i>xxx..." padded to NAME_BYTES), spread over CHANNELS
// channels (each its own connection), at most kInFlight at once. Prints
// "CODE COUNT" for each status code seen, one per line, and exits 0 once
// every call has ended.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/blocking_counter.h"

namespace {

constexpr int kInFlight = 512;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: grpc_unknown_methods HOST:PORT CHANNELS CALLS "
                 "NAME_BYTES\n";
    return 2;
  }
  const std::string address = argv[1];
  const int channels = std::atoi(argv[2]);
  const int calls = std::atoi(argv[3]);
  const size_t name_bytes = static_cast<size_t>(std::atoll(argv[4]));
  if (channels < 1 || calls < 1) {
    std::cerr << "grpc_unknown_methods: CHANNELS and CALLS must be positive\n";
    return 2;
  }

  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection each
    stubs.push_back(
        std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(
            address, grpc::InsecureChannelCredentials(), args)));
  }
  // An empty message (a request message with no fields set).
  const grpc::Slice empty(std::string{});
  std::map<int, int> codes;
  for (int first = 0; first < calls; first += kInFlight) {
    const int wave = std::min(kInFlight, calls - first);
    std::vector<grpc::ClientContext> contexts(wave);
    std::vector<grpc::ByteBuffer> requests(wave), responses(wave);
    std::vector<grpc::Status> statuses(wave);
    absl::BlockingCounter finished(wave);
    for (int j = 0; j < wave; ++j) {
      const int i = first + j;
      std::string method = "/made.up.Service/" + std::to_string(i);
      if (method.size() < name_bytes) method.resize(name_bytes, 'x');
      requests[j] = grpc::ByteBuffer(&empty, 1);
      contexts[j].set_deadline(std::chrono::system_clock::now() +
                               std::chrono::seconds(60));
      stubs[i % channels]->UnaryCall(&contexts[j], method, grpc::StubOptions(),
                                     &requests[j], &responses[j],
                                     [&statuses, &finished, j](grpc::Status s) {
                                       statuses[j] = std::move(s);
                                       finished.DecrementCount();
                                     });
    }
    finished.Wait();
    for (const grpc::Status& s : statuses) ++codes[s.error_code()];
  }
  for (const auto& [code, n] : codes) std::cout << code << " " << n << "\n";
  return 0;
}
