// FinishSignal: the coordinator's in-process signal that a trial finished
// (completed, diverged, or failed by Fail or lease expiry). The queue
// publishes it; each manager that reacts subscribes itself when the
// coordinator wires it (ResultsManager refreshes the ranking, SeedPlanner
// decides the next round, LadderPlanner advances a ladder), so the reactions
// live with the managers and the coordinator only connects them.
//
//   FinishSignal finished;
//   finished.Subscribe("results", [&](int64_t id) { ... });
//   finished.Publish(7);   // runs every listener, in subscription order
//
// Listeners run on the publishing thread, one after another in the order
// they subscribed (the coordinator subscribes results, then seeds, then the
// ladder: a seeds round may end the experiment, which the ladder then sees),
// after the finish is committed and before the experiment's watch event is
// published. A listener must not subscribe.
//
// Thread-safety: Subscribe and Publish may be called from any thread;
// Publish runs the listeners under a shared (reader) lock, so publishers on
// several threads run at once.
#ifndef PRISM_SERVER_CORE_INFRA_FINISH_SIGNAL_H_
#define PRISM_SERVER_CORE_INFRA_FINISH_SIGNAL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace prism::server {

class FinishSignal {
 public:
  using Listener = std::function<void(int64_t experiment_id)>;

  // Subscribe adds `listener` under `name` (the manager's; Names lists
  // them in the order they run).
  void Subscribe(std::string name, Listener listener);
  // Publish tells every listener that one of the experiment's trials
  // finished.
  void Publish(int64_t experiment_id) const;
  // Names lists the listeners' names in the order they run.
  std::vector<std::string> Names() const;

 private:
  struct Entry {
    std::string name;
    Listener listener;
  };
  mutable absl::Mutex mu_;
  std::vector<Entry> listeners_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::server

#endif  // PRISM_SERVER_CORE_INFRA_FINISH_SIGNAL_H_
