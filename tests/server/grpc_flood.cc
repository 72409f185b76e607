// grpc_flood: a test helper that sends oversized unary calls without a
// token, in a process of its own so that the caller can measure the
// coordinator's memory apart from the client's.
//
//   grpc_flood HOST:PORT CHANNELS CALLS_ON_LAST BYTES
//
// CHANNELS - 1 channels (each its own connection) send one call each and
// the last one sends CALLS_ON_LAST at once: ExperimentService.Submit with a
// spec_text of BYTES bytes, all from one buffer. Prints each call's status
// code, one per line, and exits 0 once every call has ended.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/blocking_counter.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: grpc_flood HOST:PORT CHANNELS CALLS_ON_LAST BYTES\n";
    return 2;
  }
  const std::string address = argv[1];
  const int channels = std::atoi(argv[2]);
  const int calls_on_last = std::atoi(argv[3]);
  const size_t text = static_cast<size_t>(std::atoll(argv[4]));
  // SubmitRequest { spec_text (field 2) = BYTES of 'a' }.
  std::string wire = "\x12";
  for (size_t n = text;; n >>= 7) {
    if (n < 0x80) {
      wire.push_back(static_cast<char>(n));
      break;
    }
    wire.push_back(static_cast<char>((n & 0x7f) | 0x80));
  }
  wire.append(text, 'a');
  const grpc::Slice slice(wire.data(), wire.size(), grpc::Slice::STATIC_SLICE);

  std::vector<std::unique_ptr<grpc::GenericStub>> stubs;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection each
    args.SetMaxSendMessageSize(-1);
    stubs.push_back(
        std::make_unique<grpc::GenericStub>(grpc::CreateCustomChannel(
            address, grpc::InsecureChannelCredentials(), args)));
  }
  const int calls = channels - 1 + calls_on_last;
  std::vector<grpc::ClientContext> contexts(calls);
  std::vector<grpc::ByteBuffer> requests(calls), responses(calls);
  std::vector<grpc::Status> statuses(calls);
  absl::BlockingCounter finished(calls);
  for (int i = 0; i < calls; ++i) {
    requests[i] = grpc::ByteBuffer(&slice, 1);
    contexts[i].set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
    stubs[std::min(i, channels - 1)]->UnaryCall(
        &contexts[i], "/prism.v1.ExperimentService/Submit", grpc::StubOptions(),
        &requests[i], &responses[i], [&statuses, &finished, i](grpc::Status s) {
          statuses[i] = std::move(s);
          finished.DecrementCount();
        });
  }
  finished.Wait();
  for (const grpc::Status& s : statuses) std::cout << s.error_code() << "\n";
  return 0;
}
