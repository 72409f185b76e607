// SqliteStore: the Store on one SQLite file.
//
// Schema v13 (versioned migrations in a `schema_migrations` table, applied in
// one transaction at Open, idempotent): users, tokens (SHA-256 hashes only),
// experiments (resolved spec as a binary proto), trials (unique per
// (experiment, schedule, seed, config fingerprint); at completion the
// metrics message, the ranking fields copied out of it into columns and a
// compact val-curve blob, so ranking neither scans points nor parses
// messages; v5: experiments' adaptive-seeds columns; v6: trials.device;
// v9: tokens' id, expiry, revocation and last use; v10: trials.target_steps;
// v12: ladders; v13: retired_ids, so a deleted experiment's ids are never
// given again), trial_attempts, points (PRIMARY KEY (trial_id, split, step),
// WITHOUT ROWID) and workers.
//
// The file runs in WAL mode with foreign keys on and memory-mapped reads, at
// the durability SqliteStoreOptions picks (below; by default a committed
// transaction survives a crash of this process). The coordinator is the only
// writer, enforced with an exclusive lock on "<db>.lock". Writes go through
// one connection under a mutex (each one transaction, statements prepared
// once and reused); reads use a pool of read-only connections, one per
// concurrent reader thread, that see the latest commit without blocking the
// writer; a background thread with its own connection checkpoints the WAL
// every kCheckpointInterval, so no commit waits for the database's fsync.
//
//   absl::StatusOr<std::unique_ptr<SqliteStore>> store =
//       SqliteStore::Open("/data/prism.db");
//   SqliteStoreOptions options;
//   options.durability = SqliteStoreOptions::Durability::kFull;
//   store = SqliteStore::Open("/data/prism.db", options);
//
// Thread-safety: all methods are thread-safe.
#ifndef PRISM_STORAGE_SQLITE_STORE_H_
#define PRISM_STORAGE_SQLITE_STORE_H_

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/store.h"

namespace prism::storage {

namespace internal {
class Connection;
class ReaderPool;
}  // namespace internal

// kSchemaVersion is the newest schema this binary knows.
inline constexpr int kSchemaVersion = 15;

// SqliteStoreOptions are the choices SqliteStore::Open takes.
struct SqliteStoreOptions {
  // Durability says what a write that returned OK survives. Neither level
  // corrupts the file (on a disk that honours fsync): after any crash it
  // opens at a committed state.
  enum class Durability {
    // kNormal (synchronous=NORMAL in WAL mode): a commit is appended to the
    // WAL without an fsync; the WAL is synced when the next checkpoint runs
    // (the store checkpoints every 500 ms). A crash of this process loses
    // nothing acknowledged, since the OS still holds the write. Power loss
    // or an OS crash may lose the most recent commits, those the OS had not
    // yet written out; the file then opens at an earlier commit, no older
    // than the last checkpoint. No fsync per commit.
    kNormal,
    // kFull (synchronous=FULL): the WAL is fsynced at every commit before
    // the write returns, so an acknowledged commit also survives power loss
    // and OS crashes (on a disk that honours fsync). One fsync per write.
    kFull,
  };
  Durability durability = Durability::kNormal;
};

class SqliteStore final : public Store {
 public:
  // Open opens or creates the database at `path` with `options` and
  // migrates it to kSchemaVersion. Unavailable when the file cannot be
  // opened or written; FailedPrecondition when another process has it open
  // through a SqliteStore, or when the file's schema is newer than this
  // binary's.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(
      const std::string& path, const SqliteStoreOptions& options = {});
  ~SqliteStore() override;

  void SetWriteObserver(WriteObserver* observer) override;
  // SchemaVersion returns the version recorded in schema_migrations.
  absl::StatusOr<int> SchemaVersion();

  absl::Status CreateToken(const std::string& token_hash,
                           const std::string& user, v1::Role role,
                           int64_t now_ms, int64_t expires_ms) override;
  absl::StatusOr<TokenInfo> LookupToken(const std::string& token_hash) override;
  absl::StatusOr<int64_t> CountTokens() override;
  absl::StatusOr<std::vector<v1::TokenInfo>> ListTokens(
      const std::string& user) override;
  absl::StatusOr<v1::TokenInfo> GetToken(const std::string& id) override;
  absl::StatusOr<v1::TokenInfo> RevokeToken(const std::string& id,
                                            int64_t now_ms) override;
  absl::Status RecordTokensUsed(
      const std::vector<std::pair<std::string, int64_t>>& used) override;

  absl::StatusOr<CreatedExperiment> CreateExperiment(
      const NewExperiment& experiment) override;
  absl::StatusOr<v1::Experiment> GetExperiment(int64_t id) override;
  absl::StatusOr<ExperimentPage> ListExperimentSummaries(
      const std::string& owner, int limit, int64_t after_id) override;
  absl::StatusOr<ExperimentPage> ListExperiments(const std::string& owner,
                                                 int limit,
                                                 int64_t after_id) override;
  absl::StatusOr<v1::Experiment> SetExperimentState(int64_t id,
                                                    v1::ExperimentState state,
                                                    int64_t now_ms) override;
  absl::StatusOr<v1::Experiment> CancelExperiment(int64_t id,
                                                  int64_t now_ms) override;
  absl::StatusOr<v1::Experiment> SetExperimentPriority(int64_t id, int priority,
                                                       int64_t now_ms) override;
  absl::StatusOr<DeletedExperiment> DeleteExperiment(int64_t id) override;

  absl::StatusOr<TrialPage> ListTrials(int64_t experiment_id,
                                       v1::TrialState state, int limit,
                                       int64_t after_id) override;
  absl::StatusOr<v1::Trial> GetTrial(int64_t trial_id) override;
  absl::StatusOr<v1::Trial> FindBaselineTrial(int64_t experiment_id,
                                              int64_t seed) override;
  absl::StatusOr<std::vector<v1::LossPoint>> GetPoints(
      int64_t trial_id) override;
  absl::StatusOr<std::vector<TrialOutcome>> ListFinishedOutcomes(
      int64_t experiment_id) override;
  absl::StatusOr<std::vector<TrialKey>> ListTrialKeys(
      int64_t experiment_id) override;
  absl::StatusOr<std::vector<ThroughputSample>> ListThroughputSamples(
      int limit) override;
  absl::StatusOr<std::vector<AshaTrial>> ListAshaTrials(
      int64_t experiment_id, const std::vector<int64_t>& rungs) override;
  absl::StatusOr<int64_t> FindLadderRung(int64_t ladder_id, int rung) override;
  absl::StatusOr<std::vector<v1::Experiment>> ListLadder(
      int64_t ladder_id) override;
  absl::Status SetLadderNote(int64_t experiment_id, const std::string& note,
                             int64_t now_ms) override;
  absl::StatusOr<ExtendedExperiment> ExtendExperiment(
      const ExperimentExtension& extension) override;
  absl::StatusOr<SeedRoundResult> ApplySeedRound(
      const SeedRound& round) override;
  absl::StatusOr<LastStored> LastStoredSteps(int64_t trial_id) override;
  absl::StatusOr<int64_t> CountFinished(int64_t experiment_id) override;
  absl::StatusOr<std::map<v1::TrialState, int64_t>> CountTrialsByState()
      override;

  absl::StatusOr<std::vector<LeaseCandidate>> ListLeaseCandidates() override;
  absl::StatusOr<std::vector<UsageSpan>> ListUsageSpans(
      int64_t ended_since_ms) override;
  absl::StatusOr<int64_t> CountQueuedTrialsOf(
      const std::string& owner) override;
  absl::Status SetUserPolicy(const std::string& user, const UserPolicy& policy,
                             int64_t now_ms) override;
  absl::StatusOr<std::map<std::string, UserPolicy>> ListUserPolicies() override;
  absl::StatusOr<std::map<std::string, int>> CountLiveTrialsByUser() override;
  absl::StatusOr<std::optional<v1::Trial>> LeaseNextTrial(
      int64_t experiment_id, const std::string& worker_id, int64_t now_ms,
      int64_t deadline_ms) override;
  absl::StatusOr<std::optional<v1::Trial>> RedeliverLease(
      const std::string& worker_id, int64_t now_ms,
      int64_t deadline_ms) override;
  absl::StatusOr<HeartbeatResult> Heartbeat(const AttemptRef& ref, int64_t step,
                                            int64_t now_ms,
                                            int64_t deadline_ms) override;
  absl::StatusOr<int64_t> StartAttempt(const AttemptRef& ref,
                                       int64_t resumed_from_step,
                                       int64_t now_ms,
                                       int64_t deadline_ms) override;
  absl::StatusOr<std::vector<ReportOutcome>> WriteReports(
      const std::vector<const ReportWrite*>& reports) override;
  absl::StatusOr<v1::Trial> CompleteTrial(
      const AttemptRef& ref, const v1::TrialMetrics& metrics,
      const std::vector<v1::LossPoint>& points, int64_t now_ms) override;
  absl::StatusOr<v1::Trial> FailTrial(const AttemptRef& ref,
                                      const std::string& message,
                                      bool retryable, int64_t now_ms) override;
  absl::StatusOr<v1::Trial> ReleaseTrial(const AttemptRef& ref,
                                         const std::string& message,
                                         int64_t now_ms) override;
  using Store::ExpireLeases;
  absl::StatusOr<std::vector<ExpiredLease>> ExpireLeases(
      int64_t now_ms, const std::function<bool()>& proceed) override;
  absl::Status ProbeWrite() override;
  absl::StatusOr<int> ExtendLiveLeases(int64_t deadline_ms) override;
  absl::StatusOr<int64_t> CountQueued() override;
  absl::StatusOr<int64_t> CountActiveExperiments(
      const std::string& owner) override;

  absl::StatusOr<v1::Worker> UpsertWorker(const v1::Worker& worker,
                                          int64_t now_ms,
                                          bool take_over) override;
  absl::StatusOr<v1::Worker> GetWorker(const std::string& id) override;
  absl::Status TouchWorker(const WorkerUpdate& update) override;
  absl::Status StopWorker(const std::string& id, int64_t now_ms) override;
  absl::StatusOr<std::vector<v1::Worker>> ListWorkers() override;

  absl::StatusOr<std::string> ScalerTag(const std::string& backend,
                                        const std::string& proposed,
                                        int64_t now_ms) override;
  absl::Status RecordScalerJob(const std::string& backend,
                               const std::string& job_id,
                               int64_t now_ms) override;
  absl::Status EndScalerJob(const std::string& backend,
                            const std::string& job_id, int64_t now_ms) override;
  absl::StatusOr<std::vector<std::string>> ListOpenScalerJobs(
      const std::string& backend) override;

 private:
  friend class SqliteStoreTestPeer;  // reads the writer's settings

  // WriterLock is an exclusive flock on "<db>.lock", held while the store is
  // open; the kernel drops it when the process dies.
  struct WriterLock {
    int fd = -1;
    ~WriterLock();
  };

  // ListExperimentPage serves ListExperiments (with_specs) and
  // ListExperimentSummaries.
  absl::StatusOr<ExperimentPage> ListExperimentPage(const std::string& owner,
                                                    int limit, int64_t after_id,
                                                    bool with_specs);

  SqliteStore(std::string path, std::unique_ptr<WriterLock> lock,
              std::unique_ptr<internal::Connection> writer,
              std::unique_ptr<internal::Connection> checkpointer);
  // CheckpointLoop copies the WAL into the database every
  // kCheckpointInterval on its own connection, until the store closes.
  void CheckpointLoop();
  static constexpr absl::Duration kCheckpointInterval = absl::Milliseconds(500);

  // Declared before the connections so it is released after they close.
  const std::unique_ptr<WriterLock> lock_;
  absl::Mutex write_mu_;
  std::unique_ptr<internal::Connection> writer_ ABSL_GUARDED_BY(write_mu_);
  // Declared after the writer so the readers close first.
  std::unique_ptr<internal::ReaderPool> readers_;
  // Used only by checkpoint_thread_.
  std::unique_ptr<internal::Connection> checkpointer_;
  absl::Mutex checkpoint_mu_;
  bool stopping_ ABSL_GUARDED_BY(checkpoint_mu_) = false;
  std::thread checkpoint_thread_;  // last: starts once the rest is built
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_SQLITE_STORE_H_
