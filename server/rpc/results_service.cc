#include "server/rpc/results_service.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "server/rpc/grpc_edge.h"

namespace prism::server {
namespace {

// WatchReactor streams one experiment's events. It subscribes before any
// write so nothing is missed, and writes one round at a time. Rounds are
// the bus's shared messages: queuing one is a pointer copy under the bus's
// lock, never a copy of its points. It holds one of the caller's stream
// slots until it is done.
class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  WatchReactor(EventBus* events, StreamSlots* slots, std::string user,
               int64_t max_buffer_bytes)
      : events_(events),
        slots_(slots),
        user_(std::move(user)),
        pending_(max_buffer_bytes) {}

  // Begin queues `first` and subscribes; nothing is written before the
  // subscription id is known, so OnDone can always unsubscribe.
  void Begin(int64_t experiment_id, v1::WatchResponse first) {
    {
      absl::MutexLock lock(&mu_);
      pending_.Push(SharedRound::Of(std::move(first)));
    }
    const int64_t id = events_->Subscribe(
        experiment_id, [this](const SharedRound& r) { OnRound(r); });
    absl::MutexLock lock(&mu_);
    subscription_ = id;
    started_ = true;
    MaybeWrite();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    current_.reset();
    if (!ok) {
      FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "stream broken"));
      return;
    }
    MaybeWrite();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishOnce(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
  }

  void OnDone() override {
    events_->Unsubscribe(subscription_);
    slots_->Release(user_);
    delete this;
  }

 private:
  void OnRound(const SharedRound& r) {
    absl::MutexLock lock(&mu_);
    if (r.round == nullptr) {
      closing_ = true;
    } else if (!finished_) {
      const size_t rounds = pending_.size();
      const int64_t bytes = pending_.bytes();
      if (!pending_.Push(r)) {
        FinishOnce(grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            absl::StrCat("the watcher fell too far behind: ", rounds,
                         " rounds of events, ", bytes,
                         " bytes unsent; limit --max-stream-buffer-bytes=",
                         pending_.max_bytes())));
        return;
      }
    }
    MaybeWrite();
  }

  void MaybeWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!started_ || finished_ || writing_) return;
    if (!pending_.empty()) {
      current_ = pending_.Pop().wire;
      writing_ = true;
      StartWrite(current_.get());
      return;
    }
    if (closing_) FinishOnce(grpc::Status::OK);
  }

  void FinishOnce(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || !started_) return;
    finished_ = true;
    Finish(status);
  }

  EventBus* const events_;
  StreamSlots* const slots_;
  const std::string user_;
  absl::Mutex mu_;
  int64_t subscription_ = 0;  // set in Begin, before any Finish
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  EventBuffer pending_ ABSL_GUARDED_BY(mu_);
  // The round being written, serialized: gRPC reads it until OnWriteDone.
  std::shared_ptr<const grpc::ByteBuffer> current_ ABSL_GUARDED_BY(mu_);
};

// FailedWatch ends a Watch at once with an error.
class FailedWatch final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit FailedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::Status ResultsServiceImpl::Rank(grpc::ServerContext* ctx,
                                      const v1::RankRequest* req,
                                      v1::RankResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return Assign(results_->Rank(*req), resp);
  });
}

grpc::Status ResultsServiceImpl::GetTrial(grpc::ServerContext* ctx,
                                          const v1::GetTrialRequest* req,
                                          v1::GetTrialResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return Assign(results_->GetTrial(*req), resp);
  });
}

grpc::Status ResultsServiceImpl::Compare(grpc::ServerContext* ctx,
                                         const v1::CompareRequest* req,
                                         v1::CompareResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return Assign(results_->Compare(*req), resp);
  });
}

grpc::Status ResultsServiceImpl::Suggest(grpc::ServerContext* ctx,
                                         const v1::SuggestRequest* req,
                                         v1::SuggestResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return Assign(results_->Suggest(*req), resp);
  });
}

grpc::Status ResultsServiceImpl::LadderTransfer(
    grpc::ServerContext* ctx, const v1::LadderTransferRequest* req,
    v1::LadderTransferResponse* resp) {
  return ServeRead(auth_, reads_, ctx, [&](const Caller&) {
    return Assign(results_->LadderTransfer(*req), resp);
  });
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* ResultsServiceImpl::Watch(
    grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* request) {
  v1::WatchRequest req;
  grpc::ByteBuffer copy(*request);  // Deserialize consumes its buffer
  if (!grpc::SerializationTraits<v1::WatchRequest>::Deserialize(&copy, &req)
           .ok()) {
    return new FailedWatch(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                        "cannot parse the WatchRequest"));
  }
  v1::WatchResponse first;
  v1::ExperimentEvent* now = first.add_events();
  std::string user;
  const grpc::Status status =
      Serve(auth_, ctx, Permission::kRead, [&](const Caller& caller) {
        // The slot first: when a storm of Watch calls finds the slots
        // taken, each refusal costs no database read.
        PRISM_RETURN_IF_ERROR(watch_slots_.Acquire(caller.user));
        absl::Status got = Assign(experiments_->Get(req.experiment_id()),
                                  now->mutable_experiment_updated());
        if (!got.ok()) {
          watch_slots_.Release(caller.user);
          return got;
        }
        user = caller.user;
        return absl::OkStatus();
      });
  if (!status.ok()) return new FailedWatch(status);
  now->set_unix_ms(now->experiment_updated().updated_unix_ms());
  auto* reactor = new WatchReactor(events_, &watch_slots_, std::move(user),
                                   max_stream_buffer_bytes_);
  reactor->Begin(req.experiment_id(), std::move(first));
  return reactor;
}

}  // namespace prism::server
