#include "server/core/queue/fair_share.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace prism::server {

int64_t UsageHorizonMs(int64_t now_ms, int64_t half_life_ms) {
  return now_ms - std::min<int64_t>(now_ms, 30 * half_life_ms);
}

std::map<std::string, double> DecayedUsageSeconds(
    const std::vector<storage::UsageSpan>& spans, int64_t now_ms,
    int64_t half_life_ms) {
  // The integral of 2^-((now - t) / H) over [start, end], in seconds:
  // H / ln 2 * (2^-((now - end) / H) - 2^-((now - start) / H)).
  const double h = static_cast<double>(half_life_ms);
  auto weight = [&](int64_t t) {
    return std::exp2(-static_cast<double>(now_ms - t) / h);
  };
  std::map<std::string, double> usage;
  for (const storage::UsageSpan& s : spans) {
    const int64_t end = s.ended_ms == 0 ? now_ms : std::min(s.ended_ms, now_ms);
    const int64_t start = std::min(s.started_ms, end);
    const double seconds =
        h / std::log(2.0) * (weight(end) - weight(start)) / 1000.0;
    usage[s.owner] += std::max(0.0, seconds);
  }
  return usage;
}

std::vector<QueueSlot> OrderQueue(
    const std::vector<storage::LeaseCandidate>& candidates,
    const std::map<std::string, UserStanding>& users) {
  std::vector<QueueSlot> order;
  order.reserve(candidates.size());
  for (const storage::LeaseCandidate& c : candidates) {
    QueueSlot slot;
    slot.candidate = c;
    auto it = users.find(c.owner);
    const UserStanding standing =
        it == users.end() ? UserStanding{} : it->second;
    slot.share = standing.share > 0 ? standing.share : 1.0;
    slot.usage_per_share = standing.usage_seconds / slot.share;
    slot.live = standing.live;
    slot.max_running = standing.max_running;
    slot.at_quota =
        standing.max_running > 0 && standing.live >= standing.max_running;
    order.push_back(std::move(slot));
  }
  std::sort(order.begin(), order.end(),
            [](const QueueSlot& a, const QueueSlot& b) {
              const storage::LeaseCandidate& x = a.candidate;
              const storage::LeaseCandidate& y = b.candidate;
              if (x.priority != y.priority) return x.priority > y.priority;
              if (a.usage_per_share != b.usage_per_share) {
                return a.usage_per_share < b.usage_per_share;
              }
              const double la = a.live / a.share;
              const double lb = b.live / b.share;
              if (la != lb) return la < lb;
              if (x.created_ms != y.created_ms) {
                return x.created_ms < y.created_ms;
              }
              return x.experiment_id < y.experiment_id;
            });
  return order;
}

std::string FormatWorkerTime(double seconds) {
  if (seconds < 120) return absl::StrFormat("%.0fs", seconds);
  if (seconds < 7200) return absl::StrFormat("%.1fm", seconds / 60);
  return absl::StrFormat("%.1fh", seconds / 3600);
}

std::map<int64_t, QueueStanding> ExplainQueue(
    const std::vector<QueueSlot>& order, const WorkerCounts& workers) {
  std::map<int64_t, QueueStanding> out;
  const QueueSlot* first_eligible = nullptr;
  for (size_t i = 0; i < order.size(); ++i) {
    const QueueSlot& me = order[i];
    const storage::LeaseCandidate& c = me.candidate;
    QueueStanding& s = out[c.experiment_id];
    s.position = static_cast<int>(i) + 1;
    if (me.at_quota) {
      s.reason = absl::StrCat("quota: user '", c.owner, "' has ", me.live,
                              " trials leased or running; max_running ",
                              me.max_running);
      continue;
    }
    const QueueSlot* ahead = first_eligible;
    if (first_eligible == nullptr) first_eligible = &me;
    if (ahead == nullptr) {
      if (workers.alive == 0) {
        s.reason = "no workers: none is alive (start one with `prism worker`)";
      } else if (workers.idle == 0) {
        s.reason = absl::StrCat("resources: next in line; all ", workers.alive,
                                " workers are busy");
      } else {
        s.reason = "next: an idle worker leases it on its next request";
      }
      continue;
    }
    const storage::LeaseCandidate& a = ahead->candidate;
    if (a.priority > c.priority) {
      s.reason = absl::StrCat("priority: experiment ", a.experiment_id,
                              " has priority ", a.priority, " (this one ",
                              c.priority, ")");
    } else if (a.owner == c.owner) {
      s.reason = absl::StrCat("behind the owner's experiment ", a.experiment_id,
                              " (submitted first)");
    } else if (ahead->usage_per_share < me.usage_per_share) {
      s.reason = absl::StrCat("fair share: user '", c.owner, "' used ",
                              FormatWorkerTime(me.usage_per_share),
                              " of worker time per share, '", a.owner, "' ",
                              FormatWorkerTime(ahead->usage_per_share));
    } else if (ahead->live / ahead->share < me.live / me.share) {
      s.reason = absl::StrCat("fair share: user '", c.owner, "' has ", me.live,
                              " trials running, '", a.owner, "' ", ahead->live);
    } else {
      s.reason = absl::StrCat("age: experiment ", a.experiment_id,
                              " was submitted first");
    }
  }
  return out;
}

}  // namespace prism::server
