#include "server/results_service.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "server/grpc_edge.h"

namespace prism::server {
namespace {

// WatchReactor streams one experiment's events. It subscribes before any
// write so nothing is missed, and writes one event at a time. Events are
// the bus's shared messages: queuing one is a pointer copy under the bus's
// lock, never a copy of its points. It holds one of the caller's stream
// slots until it is done.
class WatchReactor final
    : public grpc::ServerWriteReactor<v1::ExperimentEvent> {
 public:
  WatchReactor(EventBus* events, StreamSlots* slots, std::string user,
               int64_t max_buffer_bytes)
      : events_(events),
        slots_(slots),
        user_(std::move(user)),
        pending_(max_buffer_bytes) {}

  // Begin queues `first` and subscribes; nothing is written before the
  // subscription id is known, so OnDone can always unsubscribe.
  void Begin(int64_t experiment_id, v1::ExperimentEvent first) {
    {
      absl::MutexLock lock(&mu_);
      SharedEvent e;
      e.bytes = static_cast<int64_t>(first.ByteSizeLong());
      e.event = std::make_shared<const v1::ExperimentEvent>(std::move(first));
      pending_.Push(e);
    }
    const int64_t id = events_->Subscribe(
        experiment_id, [this](const SharedEvent& e) { OnEvent(e); });
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
  void OnEvent(const SharedEvent& e) {
    absl::MutexLock lock(&mu_);
    if (e.event == nullptr) {
      closing_ = true;
    } else if (!finished_) {
      const size_t events = pending_.size();
      const int64_t bytes = pending_.bytes();
      if (!pending_.Push(e)) {
        FinishOnce(grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            absl::StrCat("the watcher fell too far behind: ", events,
                         " events, ", bytes,
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
      current_ = pending_.Pop().event;
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
  // The event being written: gRPC reads it until OnWriteDone.
  std::shared_ptr<const v1::ExperimentEvent> current_ ABSL_GUARDED_BY(mu_);
};

// FailedWatch ends a Watch at once with an error.
class FailedWatch final : public grpc::ServerWriteReactor<v1::ExperimentEvent> {
 public:
  explicit FailedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::Status ResultsServiceImpl::Rank(grpc::ServerContext* ctx,
                                      const v1::RankRequest* req,
                                      v1::RankResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
    return Assign(results_->Rank(*req), resp);
  });
}

grpc::Status ResultsServiceImpl::GetTrial(grpc::ServerContext* ctx,
                                          const v1::GetTrialRequest* req,
                                          v1::GetTrialResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
    return Assign(results_->GetTrial(*req), resp);
  });
}

grpc::Status ResultsServiceImpl::Compare(grpc::ServerContext* ctx,
                                         const v1::CompareRequest* req,
                                         v1::CompareResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
    return Assign(results_->Compare(*req), resp);
  });
}

grpc::Status ResultsServiceImpl::Suggest(grpc::ServerContext* ctx,
                                         const v1::SuggestRequest* req,
                                         v1::SuggestResponse* resp) {
  return Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
    return Assign(results_->Suggest(*req), resp);
  });
}

grpc::ServerWriteReactor<v1::ExperimentEvent>* ResultsServiceImpl::Watch(
    grpc::CallbackServerContext* ctx, const v1::WatchRequest* req) {
  v1::ExperimentEvent first;
  std::string user;
  const grpc::Status status =
      Serve(auth_, ctx, Permission::kRead, [&](const Caller& caller) {
        PRISM_RETURN_IF_ERROR(Assign(experiments_->Get(req->experiment_id()),
                                     first.mutable_experiment_updated()));
        user = caller.user;
        return watch_slots_.Acquire(user);
      });
  if (!status.ok()) return new FailedWatch(status);
  first.set_unix_ms(first.experiment_updated().updated_unix_ms());
  auto* reactor = new WatchReactor(events_, &watch_slots_, std::move(user),
                                   max_stream_buffer_bytes_);
  reactor->Begin(req->experiment_id(), std::move(first));
  return reactor;
}

}  // namespace prism::server
