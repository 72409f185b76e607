#include "storage/check.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "prism/v1/prism.pb.h"
#include "storage/internal/sqlite.h"
#include "storage/store.h"

namespace prism::storage {
namespace {

using internal::Connection;
using internal::Query;

struct Cadence {
  int64_t steps = 0;
  int64_t log_every = 1;
  int64_t eval_every = 1;
};

struct ExperimentRow {
  v1::ExperimentState state = v1::EXPERIMENT_STATE_UNSPECIFIED;
  Cadence cadence;
  int64_t unfinished = 0;
  int64_t trials = 0;
  std::set<int64_t> seeds, baseline_seeds;
  // A seeds policy: a drained experiment waits for the coordinator's next
  // seeds decision (at the latest its next start), not an inconsistency.
  bool adaptive_seeds = false;
};

struct AttemptRow {
  int64_t attempt = 0;
  std::string worker_id;
  v1::TrialState outcome = v1::TRIAL_STATE_UNSPECIFIED;
};

struct TrialRow {
  int64_t experiment_id = 0;
  std::string label;  // "trial 7 (experiment 1, 2x3,4x3 seed 1)"
  v1::TrialState state = v1::TRIAL_STATE_UNSPECIFIED;
  int64_t attempt = 0;
  std::string worker_id;
  int64_t last_step = 0;
  bool has_metrics = false;
  std::vector<AttemptRow> attempts;
};

bool Live(v1::TrialState s) {
  return s == v1::TRIAL_LEASED || s == v1::TRIAL_RUNNING;
}
bool Unfinished(v1::TrialState s) { return s == v1::TRIAL_QUEUED || Live(s); }

std::string StateName(v1::TrialState s) {
  std::string name = v1::TrialState_Name(s);
  if (name.rfind("TRIAL_", 0) == 0) name = name.substr(6);
  absl::AsciiStrToLower(&name);
  return name;
}

// ExpectedSteps lists the steps at which the trainer emits a point of one
// split: every `every` steps before the last, then the last (and val at 0).
std::vector<int64_t> ExpectedSteps(const Cadence& c, bool val) {
  std::vector<int64_t> steps;
  if (val) steps.push_back(0);
  const int64_t every = val ? c.eval_every : c.log_every;
  for (int64_t s = every; s < c.steps; s += every) steps.push_back(s);
  if (c.steps > 0) steps.push_back(c.steps);
  return steps;
}

// CheckCurve checks one trial's stored steps per split against its cadence:
// the points form a prefix of the order the trainer emits them in (val 0,
// then at each step its train point before its val point), and all of them
// once the trial completed.
void CheckCurve(const TrialRow& t, const Cadence& c,
                const std::vector<int64_t>& train,
                const std::vector<int64_t>& val,
                std::vector<std::string>* problems) {
  struct Split {
    const char* name;
    const std::vector<int64_t>& stored;
    std::vector<int64_t> expected;
    int64_t every;
  };
  Split splits[] = {{"train", train, ExpectedSteps(c, false), c.log_every},
                    {"val", val, ExpectedSteps(c, true), c.eval_every}};
  bool prefix = true;
  for (const Split& s : splits) {
    for (size_t i = 0; i < s.stored.size(); ++i) {
      if (std::binary_search(s.expected.begin(), s.expected.end(),
                             s.stored[i])) {
        continue;
      }
      problems->push_back(absl::StrCat(
          t.label, ": ", s.name, " step ", s.stored[i],
          " is off the cadence (every ", s.every, ", ", c.steps, " steps)"));
      prefix = false;
      break;
    }
    if (!prefix) return;
    for (size_t i = 0; i < s.stored.size(); ++i) {
      if (s.stored[i] == s.expected[i]) continue;
      problems->push_back(
          absl::StrCat(t.label, ": ", s.name, " curve misses step ",
                       s.expected[i], " (stored up to ", s.stored.back(), ")"));
      return;
    }
  }
  // Across splits: the val point at step s follows the train point at s.
  const int64_t train_max = train.empty() ? -1 : train.back();
  const int64_t val_max = val.empty() ? -1 : val.back();
  const std::vector<int64_t>& expected_val = splits[1].expected;
  const std::vector<int64_t>& expected_train = splits[0].expected;
  if (val.size() < expected_val.size() &&
      expected_val[val.size()] < train_max) {
    problems->push_back(absl::StrCat(t.label, ": val curve misses step ",
                                     expected_val[val.size()],
                                     " (train stored up to ", train_max, ")"));
    return;
  }
  if (train.size() < expected_train.size() &&
      expected_train[train.size()] <= val_max) {
    problems->push_back(absl::StrCat(t.label, ": train curve misses step ",
                                     expected_train[train.size()],
                                     " (val stored up to ", val_max, ")"));
    return;
  }
  if (t.state == v1::TRIAL_COMPLETED) {
    for (const Split& s : splits) {
      if (s.stored.size() == s.expected.size()) continue;
      problems->push_back(absl::StrCat(
          t.label, ": completed with ", s.stored.size(), " of ",
          s.expected.size(), " ", s.name, " points (next missing step ",
          s.expected[s.stored.size()], ")"));
    }
  }
  const int64_t stored_max = std::max(train_max, val_max);
  if (stored_max > t.last_step) {
    problems->push_back(absl::StrCat(t.label, ": last_step ", t.last_step,
                                     " is behind its stored step ",
                                     stored_max));
  }
}

void CheckAttempts(const TrialRow& t, std::vector<std::string>* problems) {
  for (size_t i = 0; i < t.attempts.size(); ++i) {
    if (t.attempts[i].attempt == static_cast<int64_t>(i) + 1) continue;
    problems->push_back(absl::StrCat(t.label, ": attempt rows skip from ", i,
                                     " to ", t.attempts[i].attempt));
    return;
  }
  if (static_cast<int64_t>(t.attempts.size()) != t.attempt) {
    problems->push_back(absl::StrCat(t.label, ": at attempt ", t.attempt,
                                     " but ", t.attempts.size(),
                                     " attempt rows"));
    return;
  }
  std::vector<int64_t> open;
  for (const AttemptRow& a : t.attempts) {
    if (a.outcome == v1::TRIAL_RUNNING) open.push_back(a.attempt);
  }
  if (Live(t.state)) {
    if (open.size() != 1 || open[0] != t.attempt) {
      problems->push_back(absl::StrCat(
          t.label, ": ", StateName(t.state), " at attempt ", t.attempt,
          " but its open attempts are [", absl::StrJoin(open, ","), "]"));
    } else if (t.attempts.back().worker_id != t.worker_id) {
      problems->push_back(absl::StrCat(
          t.label, ": held by worker ", t.worker_id, " but attempt ", t.attempt,
          " is worker ", t.attempts.back().worker_id, "'s"));
    }
    return;
  }
  if (!open.empty()) {
    problems->push_back(absl::StrCat(t.label, ": ", StateName(t.state),
                                     " but attempt ", open[0],
                                     " is still open"));
    return;
  }
  // A trial stopped at an ASHA rung ended its last attempt there, with
  // metrics, as a finished one did.
  const bool finished =
      t.state == v1::TRIAL_COMPLETED || t.state == v1::TRIAL_DIVERGED ||
      t.state == v1::TRIAL_FAILED || t.state == v1::TRIAL_STOPPED_AT_RUNG;
  if (!finished) return;
  if (t.attempts.empty()) {
    if (t.state != v1::TRIAL_FAILED) {
      problems->push_back(
          absl::StrCat(t.label, ": ", StateName(t.state), " without attempts"));
    }
    return;
  }
  if (t.attempts.back().outcome != t.state) {
    problems->push_back(absl::StrCat(t.label, ": ", StateName(t.state),
                                     " but its last attempt ended ",
                                     StateName(t.attempts.back().outcome)));
  }
  if (t.state != v1::TRIAL_FAILED && !t.has_metrics) {
    problems->push_back(
        absl::StrCat(t.label, ": ", StateName(t.state), " without metrics"));
  }
}

class Checker {
 public:
  explicit Checker(Connection* c) : c_(c) {}

  absl::StatusOr<DatabaseCheck> Run() {
    PRISM_RETURN_IF_ERROR(c_->Exec("BEGIN"));
    absl::Status status = ReadAndCheck();
    (void)c_->Exec("COMMIT");
    if (!status.ok()) return status;
    return std::move(result_);
  }

 private:
  absl::Status ReadAndCheck() {
    {
      PRISM_ASSIGN_OR_RETURN(
          Query q, c_->Prepare("SELECT COUNT(*) FROM sqlite_master WHERE type "
                               "= 'table' AND name = 'schema_migrations'"));
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row || q.Int(0) == 0) {
        return absl::FailedPreconditionError(
            "not a Prism database (no schema_migrations table)");
      }
    }
    PRISM_RETURN_IF_ERROR(ReadExperiments());
    PRISM_RETURN_IF_ERROR(ReadTrials());
    PRISM_RETURN_IF_ERROR(ReadAttempts());
    PRISM_RETURN_IF_ERROR(CheckPoints());
    for (const auto& [id, t] : trials_) CheckAttempts(t, &result_.problems);
    CheckExperiments();
    return CheckTokens();
  }

  // CheckTokens checks the v9 token columns: an id is its hash's first 12
  // digits, and a database with tokens keeps a usable admin token (the
  // first admin token is only made for an empty table, so without one
  // nobody can create or revoke tokens any more).
  absl::Status CheckTokens() {
    {
      PRISM_ASSIGN_OR_RETURN(
          Query q, c_->Prepare("SELECT COUNT(*) FROM pragma_table_info("
                               "'tokens') WHERE name = 'revoked_ms'"));
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row || q.Int(0) == 0) return absl::OkStatus();  // before v9
    }
    {
      PRISM_ASSIGN_OR_RETURN(Query q,
                             c_->Prepare("SELECT id FROM tokens WHERE id != "
                                         "substr(hash, 1, 12) ORDER BY id"));
      while (true) {
        PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
        if (!row) break;
        result_.problems.push_back(
            absl::StrCat("token '", q.Text(0),
                         "': its id is not the first 12 digits of its hash"));
      }
    }
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        c_->Prepare("SELECT COUNT(*), COUNT(CASE WHEN role = ? AND revoked_ms "
                    "= 0 AND (expires_ms = 0 OR expires_ms > CAST((julianday("
                    "'now') - 2440587.5) * 86400000 AS INTEGER)) THEN 1 END) "
                    "FROM tokens"));
    q.Bind(1, static_cast<int64_t>(v1::ROLE_ADMIN));
    PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
    if (row && q.Int(0) > 0 && q.Int(1) == 0) {
      result_.problems.push_back(
          "tokens: no usable admin token (each is revoked or expired), so "
          "nobody can create or revoke tokens");
    }
    return absl::OkStatus();
  }

  absl::Status ReadExperiments() {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c_->Prepare("SELECT id, spec, state FROM experiments"));
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      ExperimentRow& e = experiments_[q.Int(0)];
      e.state = static_cast<v1::ExperimentState>(q.Int(2));
      v1::ExperimentSpec spec;
      if (!spec.ParseFromString(std::string(q.BlobView(1)))) {
        result_.problems.push_back(
            absl::StrCat("experiment ", q.Int(0), ": unreadable spec"));
        continue;
      }
      e.cadence.steps = spec.budget().steps();
      e.cadence.log_every = std::max<int64_t>(1, spec.budget().log_every());
      e.cadence.eval_every = std::max<int64_t>(1, spec.budget().eval_every());
      e.adaptive_seeds = DecidedByCoordinator(spec);
    }
    result_.experiments = static_cast<int64_t>(experiments_.size());
    return absl::OkStatus();
  }

  absl::Status ReadTrials() {
    PRISM_ASSIGN_OR_RETURN(
        Query q,
        c_->Prepare("SELECT id, experiment_id, schedule, seed, is_baseline, "
                    "state, attempt, worker_id, last_step, metrics IS NOT "
                    "NULL FROM trials"));
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      TrialRow& t = trials_[q.Int(0)];
      t.experiment_id = q.Int(1);
      t.label = absl::StrCat("trial ", q.Int(0), " (experiment ", q.Int(1),
                             ", ", q.Text(2), " seed ", q.Int(3), ")");
      t.state = static_cast<v1::TrialState>(q.Int(5));
      t.attempt = q.Int(6);
      t.worker_id = q.Text(7);
      t.last_step = q.Int(8);
      t.has_metrics = q.Int(9) != 0;
      auto e = experiments_.find(t.experiment_id);
      if (e == experiments_.end()) {
        result_.problems.push_back(
            absl::StrCat(t.label, ": its experiment does not exist"));
        continue;
      }
      ++e->second.trials;
      if (Unfinished(t.state)) ++e->second.unfinished;
      e->second.seeds.insert(q.Int(3));
      if (q.Int(4) != 0) e->second.baseline_seeds.insert(q.Int(3));
    }
    result_.trials = static_cast<int64_t>(trials_.size());
    return absl::OkStatus();
  }

  absl::Status ReadAttempts() {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c_->Prepare("SELECT trial_id, attempt, worker_id, outcome "
                             "FROM trial_attempts ORDER BY trial_id, attempt"));
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      auto t = trials_.find(q.Int(0));
      if (t == trials_.end()) {
        result_.problems.push_back(absl::StrCat("attempt ", q.Int(1),
                                                " of trial ", q.Int(0),
                                                ": the trial does not exist"));
        continue;
      }
      t->second.attempts.push_back(
          {q.Int(1), q.Text(2), static_cast<v1::TrialState>(q.Int(3))});
    }
    return absl::OkStatus();
  }

  // CheckPoints streams the points in key order, one trial at a time.
  absl::Status CheckPoints() {
    PRISM_ASSIGN_OR_RETURN(
        Query q, c_->Prepare("SELECT trial_id, split, step FROM points ORDER "
                             "BY trial_id, split, step"));
    std::set<int64_t> seen;
    int64_t current = 0;
    std::vector<int64_t> train, val;
    auto finish = [&] {
      if (current == 0) return;
      seen.insert(current);
      auto t = trials_.find(current);
      if (t == trials_.end()) {
        result_.problems.push_back(
            absl::StrCat("trial ", current, ": ", train.size() + val.size(),
                         " points stored for a trial that does not exist"));
      } else {
        CheckCurve(t->second, CadenceOf(t->second), train, val,
                   &result_.problems);
      }
      train.clear();
      val.clear();
    };
    int64_t last_split = 0, last_step = -1;
    while (true) {
      PRISM_ASSIGN_OR_RETURN(bool row, q.Step());
      if (!row) break;
      ++result_.points;
      const int64_t trial = q.Int(0), split = q.Int(1), step = q.Int(2);
      if (trial != current) {
        finish();
        current = trial;
      } else if (split == last_split && step == last_step) {
        result_.problems.push_back(absl::StrCat("trial ", trial, ": split ",
                                                split, " step ", step,
                                                " is stored more than once"));
        continue;
      }
      last_split = split;
      last_step = step;
      if (split == v1::SPLIT_TRAIN) {
        train.push_back(step);
      } else if (split == v1::SPLIT_VAL) {
        val.push_back(step);
      } else {
        result_.problems.push_back(absl::StrCat(
            "trial ", trial, ": a point of unknown split ", split));
      }
    }
    finish();
    // A completed trial without a single point is incomplete too.
    for (const auto& [id, t] : trials_) {
      if (seen.count(id) == 0 && t.state == v1::TRIAL_COMPLETED) {
        CheckCurve(t, CadenceOf(t), {}, {}, &result_.problems);
      }
    }
    return absl::OkStatus();
  }

  Cadence CadenceOf(const TrialRow& t) const {
    auto e = experiments_.find(t.experiment_id);
    return e == experiments_.end() ? Cadence{} : e->second.cadence;
  }

  void CheckExperiments() {
    for (const auto& [id, e] : experiments_) {
      const std::string label = absl::StrCat("experiment ", id);
      if (e.trials == 0) {
        result_.problems.push_back(absl::StrCat(label, ": has no trials"));
        continue;
      }
      if (e.state == v1::EXPERIMENT_DONE && e.unfinished > 0) {
        result_.problems.push_back(absl::StrCat(
            label, ": done with ", e.unfinished, " unfinished trial(s)"));
      }
      if ((e.state == v1::EXPERIMENT_ACTIVE ||
           e.state == v1::EXPERIMENT_PAUSED) &&
          e.unfinished == 0 && !e.adaptive_seeds) {
        result_.problems.push_back(
            absl::StrCat(label, ": every trial finished but it is not done"));
      }
      for (int64_t seed : e.seeds) {
        if (e.baseline_seeds.count(seed) == 0) {
          result_.problems.push_back(
              absl::StrCat(label, ": seed ", seed, " has no baseline trial"));
        }
      }
    }
  }

  Connection* const c_;
  DatabaseCheck result_;
  std::map<int64_t, ExperimentRow> experiments_;
  std::map<int64_t, TrialRow> trials_;
};

}  // namespace

absl::StatusOr<DatabaseCheck> CheckDatabase(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat("no database file ", path));
  }
  Connection::Options options;
  options.read_only = true;
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> c,
                         Connection::Open(path, options));
  return Checker(c.get()).Run();
}

}  // namespace prism::storage
