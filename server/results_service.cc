#include "server/results_service.h"

#include <deque>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/grpc_edge.h"

namespace prism::server {
namespace {

// A watcher that falls this far behind is cut off rather than buffered
// without bound.
constexpr size_t kMaxPendingEvents = 10000;

// WatchReactor streams one experiment's events. It subscribes before any
// write so nothing is missed, and writes one event at a time.
class WatchReactor final
    : public grpc::ServerWriteReactor<v1::ExperimentEvent> {
 public:
  explicit WatchReactor(EventBus* events) : events_(events) {}

  // Begin queues `first` and subscribes; nothing is written before the
  // subscription id is known, so OnDone can always unsubscribe.
  void Begin(int64_t experiment_id, v1::ExperimentEvent first) {
    {
      absl::MutexLock lock(&mu_);
      pending_.push_back(std::move(first));
    }
    const int64_t id = events_->Subscribe(
        experiment_id, [this](const v1::ExperimentEvent* e) { OnEvent(e); });
    absl::MutexLock lock(&mu_);
    subscription_ = id;
    started_ = true;
    MaybeWrite();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
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
    delete this;
  }

 private:
  void OnEvent(const v1::ExperimentEvent* event) {
    absl::MutexLock lock(&mu_);
    if (event == nullptr) {
      closing_ = true;
    } else if (pending_.size() >= kMaxPendingEvents) {
      FinishOnce(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                              "the watcher fell too far behind"));
      return;
    } else {
      pending_.push_back(*event);
    }
    MaybeWrite();
  }

  void MaybeWrite() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!started_ || finished_ || writing_) return;
    if (!pending_.empty()) {
      current_ = std::move(pending_.front());
      pending_.pop_front();
      writing_ = true;
      StartWrite(&current_);
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
  absl::Mutex mu_;
  int64_t subscription_ = 0;  // set in Begin, before any Finish
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<v1::ExperimentEvent> pending_ ABSL_GUARDED_BY(mu_);
  v1::ExperimentEvent current_ ABSL_GUARDED_BY(mu_);
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

grpc::ServerWriteReactor<v1::ExperimentEvent>* ResultsServiceImpl::Watch(
    grpc::CallbackServerContext* ctx, const v1::WatchRequest* req) {
  v1::ExperimentEvent first;
  const grpc::Status status =
      Serve(auth_, ctx, Permission::kRead, [&](const Caller&) {
        return Assign(experiments_->Get(req->experiment_id()),
                      first.mutable_experiment_updated());
      });
  if (!status.ok()) return new FailedWatch(status);
  first.set_unix_ms(first.experiment_updated().updated_unix_ms());
  auto* reactor = new WatchReactor(events_);
  reactor->Begin(req->experiment_id(), std::move(first));
  return reactor;
}

}  // namespace prism::server
