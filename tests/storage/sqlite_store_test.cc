#include "storage/sqlite_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/internal/row_codecs.h"
#include "storage/internal/schema.h"
#include "storage/internal/sqlite.h"
#include "tests/storage/store_test_util.h"
#include "tests/testing/scoped_umask.h"

namespace prism::storage {

// SqliteStoreTestPeer reads settings of a store's private writer connection.
class SqliteStoreTestPeer {
 public:
  // WriterSynchronous returns the writer's PRAGMA synchronous (1 NORMAL,
  // 2 FULL), or -1 when it cannot be read.
  static int64_t WriterSynchronous(SqliteStore& store) {
    absl::MutexLock lock(&store.write_mu_);
    absl::StatusOr<internal::Query> q =
        store.writer_->Prepare("PRAGMA synchronous");
    if (!q.ok() || !q->Step().value_or(false)) return -1;
    return q->Int(0);
  }
};

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeExperiment;
using testing::Point;
using testing::TempDir;
using testing::TrainedMetrics;

std::unique_ptr<SqliteStore> OpenOrDie(const std::string& path) {
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
  EXPECT_TRUE(store.ok()) << store.status();
  return std::move(*store);
}

// QueryInt runs a one-value SQL query on a raw connection to the file.
int64_t QueryInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  int64_t value = -1;
  if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

std::string QueryText(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
  std::string value;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.File("prism.db");
    store_ = OpenOrDie(path_);
    v1::Worker w;
    w.set_id("w1");
    w.set_host("h");
    ASSERT_TRUE(store_->UpsertWorker(w, 1000, /*take_over=*/false).ok());
    w.set_id("w2");
    ASSERT_TRUE(store_->UpsertWorker(w, 1000, /*take_over=*/false).ok());
  }

  int64_t CreateOrDie(const NewExperiment& e) {
    absl::StatusOr<CreatedExperiment> created = store_->CreateExperiment(e);
    EXPECT_TRUE(created.ok()) << created.status();
    return created->id;
  }

  v1::Trial LeaseOrDie(int64_t experiment_id, const std::string& worker,
                       int64_t now_ms = 2000) {
    absl::StatusOr<std::optional<v1::Trial>> t =
        store_->LeaseNextTrial(experiment_id, worker, now_ms, now_ms + 30000);
    EXPECT_TRUE(t.ok()) << t.status();
    EXPECT_TRUE(t->has_value());
    return **t;
  }

  absl::StatusOr<ReportOutcome> Report(const v1::Trial& t,
                                       const std::string& worker,
                                       std::vector<v1::LossPoint> points) {
    ReportWrite w;
    w.ref = AttemptRef{t.id(), t.attempt(), worker};
    w.points = std::move(points);
    w.now_ms = 3000;
    w.lease_deadline_ms = 33000;
    absl::StatusOr<std::vector<ReportOutcome>> out = store_->WriteReports({&w});
    if (!out.ok()) return out.status();
    return (*out)[0];
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(SqliteStoreTest, NewFileGetsEveryMigrationInWalMode) {
  EXPECT_EQ(*store_->SchemaVersion(), kSchemaVersion);
  EXPECT_EQ(QueryText(path_, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM schema_migrations"),
            kSchemaVersion);
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  EXPECT_GT(id, 0);
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM pragma_foreign_key_check"),
            0);
}

TEST_F(SqliteStoreTest, TheScalerTagIsKeptAndJobsStayOpenUntilEnded) {
  EXPECT_EQ(*store_->ScalerTag("slurm", "aaaa", 1), "aaaa");
  store_.reset();
  store_ = OpenOrDie(path_);
  // The first tag stays: later starts find the same jobs.
  EXPECT_EQ(*store_->ScalerTag("slurm", "bbbb", 2), "aaaa");
  ASSERT_TRUE(store_->RecordScalerJob("slurm", "7", 3).ok());
  ASSERT_TRUE(store_->RecordScalerJob("slurm", "8", 3).ok());
  ASSERT_TRUE(store_->RecordScalerJob("slurm", "7", 4).ok());  // again
  ASSERT_TRUE(store_->EndScalerJob("slurm", "8", 5).ok());
  EXPECT_EQ(*store_->ListOpenScalerJobs("slurm"),
            std::vector<std::string>{"7"});
  EXPECT_TRUE(store_->ListOpenScalerJobs("other")->empty());
  EXPECT_EQ(QueryInt(path_,
                     "SELECT ended_ms FROM scaler_jobs WHERE job_id = "
                     "'8'"),
            5);
}

TEST_F(SqliteStoreTest, ReopeningAppliesNoMigrationTwiceAndKeepsData) {
  const int64_t id =
      CreateOrDie(MakeExperiment("alice", {"4x4", "2x2,4x2"}, {1, 2}));
  store_.reset();
  store_ = OpenOrDie(path_);
  store_.reset();
  store_ = OpenOrDie(path_);
  EXPECT_EQ(*store_->SchemaVersion(), kSchemaVersion);
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM schema_migrations"),
            kSchemaVersion);
  absl::StatusOr<v1::Experiment> e = store_->GetExperiment(id);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->owner(), "alice");
  EXPECT_EQ(e->counts().total(), 4);
  EXPECT_EQ(e->counts().queued(), 4);
  EXPECT_EQ(e->state(), v1::EXPERIMENT_ACTIVE);
  EXPECT_EQ(e->spec().model().preset(), "tiny");
}

TEST(SqliteStoreMigrationTest, AV1DatabaseMigratesKeepingItsHistory) {
  TempDir dir;
  const std::string path = dir.File("v1.db");
  {
    // A database exactly as a v1 binary left it: the v1 schema and rows.
    absl::StatusOr<std::unique_ptr<internal::Connection>> conn =
        internal::Connection::Open(path, internal::Connection::Options{});
    ASSERT_TRUE(conn.ok()) << conn.status();
    ASSERT_TRUE(internal::Migrate(conn->get(), 1).ok());
    ASSERT_TRUE((*conn)
                    ->Exec("INSERT INTO users VALUES ('alice', 1);"
                           "INSERT INTO experiments VALUES (1, 'old', 'alice', "
                           "x'', 1, 0, 2, 1, 1);"
                           "INSERT INTO trials (id, experiment_id, schedule, "
                           "seed, config_fingerprint, is_baseline, state, "
                           "attempt, worker_id, lease_deadline_ms, last_step, "
                           "total_steps, created_ms) VALUES (1, 1, '4x4', 1, "
                           "'fp', 1, 3, 2, 'w2', 90000, 15, 100, 1);"
                           "INSERT INTO trial_attempts VALUES (1, 1, 'w1', 2, "
                           "3, 5, 'lease expired (no heartbeat)', 0);"
                           "INSERT INTO trial_attempts (trial_id, attempt, "
                           "worker_id, started_ms, outcome, resumed_from_step) "
                           "VALUES (1, 2, 'w2', 4, 3, 15);")
                    .ok());
  }
  EXPECT_EQ(QueryInt(path, "SELECT MAX(version) FROM schema_migrations"), 1);

  std::unique_ptr<SqliteStore> store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->SchemaVersion(), kSchemaVersion);
  EXPECT_EQ(QueryInt(path,
                     "SELECT COUNT(*) FROM pragma_table_info("
                     "'trial_attempts') WHERE name = "
                     "'resumed_from_step' AND \"notnull\" = 0"),
            1);
  absl::StatusOr<v1::Trial> trial = store->GetTrial(1);
  ASSERT_TRUE(trial.ok()) << trial.status();
  ASSERT_EQ(trial->attempts_size(), 2);
  EXPECT_EQ(trial->attempts(0).outcome(), v1::TRIAL_FAILED);
  EXPECT_EQ(trial->attempts(0).message(), "lease expired (no heartbeat)");
  EXPECT_EQ(trial->attempts(0).resumed_from_step(), 0);
  EXPECT_EQ(trial->attempts(1).worker_id(), "w2");
  EXPECT_EQ(trial->attempts(1).resumed_from_step(), 15);

  // The open v1 attempt carries on under v2: Start corrects its resume step,
  // and its expiry is the second failure of two allowed.
  ASSERT_TRUE(store->StartAttempt(AttemptRef{1, 2, "w2"}, 10, 5, 90000).ok());
  EXPECT_EQ(store->GetTrial(1)->attempts(1).resumed_from_step(), 10);
  absl::StatusOr<std::vector<ExpiredLease>> expired =
      store->ExpireLeases(100000);
  ASSERT_TRUE(expired.ok()) << expired.status();
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_EQ((*expired)[0].trial.state(), v1::TRIAL_FAILED);
  EXPECT_EQ(QueryInt(path, "SELECT COUNT(*) FROM pragma_foreign_key_check"), 0);
}

// V3Trial is a finished trial row as a v3 binary's CompleteTrial left it:
// the metrics message and the val curve blob, nothing else about ranking.
struct V3Trial {
  int64_t id = 0;
  std::string schedule;
  bool is_baseline = false;
  v1::TrialState state = v1::TRIAL_COMPLETED;
  std::string metrics;  // serialized prism.v1.TrialMetrics
  std::vector<std::pair<int64_t, float>> val_curve;
};

// WriteV3Database creates a v3 database at `path` (the v3 schema, applied by
// the migrations of that version) holding experiment 1 and `trials`.
void WriteV3Database(const std::string& path,
                     const std::vector<V3Trial>& trials) {
  absl::StatusOr<std::unique_ptr<internal::Connection>> conn =
      internal::Connection::Open(path, internal::Connection::Options{});
  ASSERT_TRUE(conn.ok()) << conn.status();
  internal::Connection* c = conn->get();
  ASSERT_TRUE(internal::Migrate(c, 3).ok());
  ASSERT_TRUE(c->Exec("INSERT INTO users VALUES ('alice', 1);"
                      "INSERT INTO experiments VALUES (1, 'old', 'alice', "
                      "x'', 3, 0, 2, 1, 1);")
                  .ok());
  for (const V3Trial& t : trials) {
    std::string curve;
    for (const auto& [step, loss] : t.val_curve) {
      internal::AppendCurvePoint(step, loss, &curve);
    }
    absl::StatusOr<internal::Query> q = c->Prepare(
        "INSERT INTO trials (id, experiment_id, schedule, seed, "
        "config_fingerprint, is_baseline, state, attempt, worker_id, "
        "last_step, total_steps, created_ms, started_ms, finished_ms, "
        "metrics, val_curve) VALUES (?1, 1, ?2, 1, 'fp', ?3, ?4, 1, 'w1', "
        "100, 100, 1, 2, 3, ?5, ?6)");
    ASSERT_TRUE(q.ok()) << q.status();
    q->Bind(1, t.id);
    q->BindText(2, t.schedule);
    q->Bind(3, int64_t{t.is_baseline ? 1 : 0});
    q->Bind(4, static_cast<int64_t>(t.state));
    q->BindBlob(5, t.metrics);
    q->BindBlob(6, curve);
    ASSERT_TRUE(q->Run().ok());
  }
}

TEST(SqliteStoreMigrationTest, AV3DatabaseRanksTheSameAfterGainingColumns) {
  TempDir dir;
  const std::string path = dir.File("v3.db");
  v1::TrialMetrics baseline;
  baseline.set_final_val_loss(3.3748);
  baseline.set_min_val_loss(3.37);
  baseline.set_tokens_per_second(51234.5);
  baseline.set_steps(100);
  baseline.add_attention_distance(12.5);
  baseline.add_attention_distance(40.25);
  baseline.set_mfu(0.41);
  baseline.add_milestones()->set_target(3.4);
  baseline.mutable_milestones(0)->set_step(90);
  baseline.set_device("cuda:0");
  baseline.set_cpu_share(0.75);
  v1::TrialMetrics prism_metrics;
  prism_metrics.set_final_val_loss(3.3604);
  prism_metrics.set_min_val_loss(3.36);
  prism_metrics.set_tokens_per_second(50999.0);
  prism_metrics.set_steps(100);
  v1::TrialMetrics diverged;
  diverged.set_diverged(true);
  diverged.set_diverged_step(40);
  diverged.set_final_val_loss(9.5);
  WriteV3Database(path, {{1,
                          "4x4",
                          true,
                          v1::TRIAL_COMPLETED,
                          baseline.SerializeAsString(),
                          {{50, 3.5f}, {100, 3.3748f}}},
                         {2,
                          "2x2,4x2",
                          false,
                          v1::TRIAL_COMPLETED,
                          prism_metrics.SerializeAsString(),
                          {{50, 3.45f}, {100, 3.3604f}}},
                         {3,
                          "1x1,4x3",
                          false,
                          v1::TRIAL_DIVERGED,
                          diverged.SerializeAsString(),
                          {{50, 9.5f}}}});
  EXPECT_EQ(QueryInt(path, "SELECT MAX(version) FROM schema_migrations"), 3);

  std::unique_ptr<SqliteStore> store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->SchemaVersion(), kSchemaVersion);
  absl::StatusOr<std::vector<TrialOutcome>> outcomes =
      store->ListFinishedOutcomes(1);
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  ASSERT_EQ(outcomes->size(), 3u);
  const TrialOutcome& b = (*outcomes)[0];
  EXPECT_EQ(b.trial_id, 1);
  EXPECT_EQ(b.schedule, "4x4");
  EXPECT_EQ(b.seed, 1);
  EXPECT_TRUE(b.is_baseline);
  EXPECT_DOUBLE_EQ(b.final_val_loss, 3.3748);
  EXPECT_DOUBLE_EQ(b.min_val_loss, 3.37);
  EXPECT_DOUBLE_EQ(b.tokens_per_second, 51234.5);
  EXPECT_THAT(b.attention_distance, ElementsAre(12.5, 40.25));
  EXPECT_THAT(b.val_steps, ElementsAre(50, 100));
  EXPECT_THAT(b.val_losses, ElementsAre(3.5f, 3.3748f));
  // The device comes from the metrics (v6), the worker from its column.
  EXPECT_EQ(b.device, "cuda:0");
  EXPECT_EQ(b.cpu_share, 0.75);  // and the share of the cores (v7)
  EXPECT_EQ(b.worker_id, "w1");
  const TrialOutcome& p = (*outcomes)[1];
  EXPECT_EQ(p.trial_id, 2);
  EXPECT_FALSE(p.is_baseline);
  EXPECT_DOUBLE_EQ(p.final_val_loss, 3.3604);
  EXPECT_DOUBLE_EQ(p.min_val_loss, 3.36);
  EXPECT_DOUBLE_EQ(p.tokens_per_second, 50999.0);
  EXPECT_TRUE(p.attention_distance.empty());
  EXPECT_EQ(p.device, "");  // its metrics name none
  EXPECT_THAT(p.val_steps, ElementsAre(50, 100));
  EXPECT_EQ(p.state, OutcomeState::kCompleted);
  // The diverged trial is listed, for its count, without metrics.
  const TrialOutcome& d = (*outcomes)[2];
  EXPECT_EQ(d.trial_id, 3);
  EXPECT_EQ(d.state, OutcomeState::kDiverged);
  EXPECT_EQ(d.final_val_loss, 0.0);

  // The columns themselves, diverged trial included.
  EXPECT_EQ(QueryText(path,
                      "SELECT final_val_loss || ' ' || min_val_loss || ' ' "
                      "|| tokens_per_second || ' ' || diverged || ' ' || "
                      "hex(attention_distance) FROM trials WHERE id = 1"),
            "3.3748 3.37 51234.5 0 00000000000029400000000000204440");
  EXPECT_EQ(QueryInt(path, "SELECT diverged FROM trials WHERE id = 3"), 1);
  EXPECT_EQ(QueryText(path, "SELECT final_val_loss FROM trials WHERE id = 3"),
            "9.5");
  EXPECT_EQ(QueryInt(path,
                     "SELECT length(attention_distance) FROM trials "
                     "WHERE id = 2"),
            0);
  // Reopening applies nothing again.
  store.reset();
  store = OpenOrDie(path);
  EXPECT_EQ(QueryInt(path, "SELECT COUNT(*) FROM schema_migrations"),
            kSchemaVersion);
  EXPECT_EQ(store->ListFinishedOutcomes(1)->size(), 3u);
}

TEST(SqliteStoreMigrationTest, AV3TrialWhoseMetricsDoNotParseStaysDataLoss) {
  TempDir dir;
  const std::string path = dir.File("v3.db");
  v1::TrialMetrics good;
  good.set_final_val_loss(3.5);
  WriteV3Database(path, {{1,
                          "4x4",
                          true,
                          v1::TRIAL_COMPLETED,
                          good.SerializeAsString(),
                          {{100, 3.5f}}},
                         {2,
                          "2x2,4x2",
                          false,
                          v1::TRIAL_COMPLETED,
                          std::string("\xff\xff\xff", 3),
                          {{100, 3.4f}}}});

  // The migration succeeds (the coordinator starts); the broken row keeps
  // no ranking columns and ranking its experiment reports the loss, as v3
  // did.
  std::unique_ptr<SqliteStore> store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->SchemaVersion(), kSchemaVersion);
  EXPECT_EQ(QueryInt(path,
                     "SELECT COUNT(*) FROM trials WHERE final_val_loss IS "
                     "NULL"),
            1);
  absl::StatusOr<std::vector<TrialOutcome>> outcomes =
      store->ListFinishedOutcomes(1);
  ASSERT_FALSE(outcomes.ok());
  EXPECT_EQ(outcomes.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(outcomes.status().message()), HasSubstr("trial 2"));
}

TEST(SqliteStoreDurabilityTest, DurabilityPicksTheWritersSynchronousSetting) {
  TempDir dir;
  const std::string path = dir.File("prism.db");
  {
    std::unique_ptr<SqliteStore> store = OpenOrDie(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(SqliteStoreTestPeer::WriterSynchronous(*store), 1);  // NORMAL
  }
  SqliteStoreOptions options;
  options.durability = SqliteStoreOptions::Durability::kFull;
  absl::StatusOr<std::unique_ptr<SqliteStore>> full =
      SqliteStore::Open(path, options);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(SqliteStoreTestPeer::WriterSynchronous(**full), 2);  // FULL
  EXPECT_TRUE(
      (*full)->CreateExperiment(MakeExperiment("a", {"4x4"}, {1})).ok());
  full->reset();
  options.durability = SqliteStoreOptions::Durability::kNormal;
  full = SqliteStore::Open(path, options);
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(SqliteStoreTestPeer::WriterSynchronous(**full), 1);
  EXPECT_EQ((*full)->GetExperiment(1)->counts().total(), 1);
}

TEST_F(SqliteStoreTest, NewerSchemaVersionIsRefused) {
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "INSERT INTO schema_migrations VALUES (99, 'future', 0)",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()), HasSubstr("99"));
}

TEST_F(SqliteStoreTest, ASecondWriterOnTheSameFileIsRefused) {
  absl::StatusOr<std::unique_ptr<SqliteStore>> second =
      SqliteStore::Open(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("in use"));
  store_.reset();
  EXPECT_TRUE(SqliteStore::Open(path_).ok());
}

TEST_F(SqliteStoreTest, UnwritablePathIsUnavailable) {
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(dir_.File("no/such/dir/prism.db"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(SqliteStoreTest, IdenticalTrialsAreCreatedOnce) {
  NewExperiment e = MakeExperiment("alice", {"4x4", "2x2,4x2"}, {1});
  e.trials.push_back(NewTrial{"4x4", 1, true});  // the same trial again
  absl::StatusOr<CreatedExperiment> created = store_->CreateExperiment(e);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->trials_created, 2);
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM trials"), 2);
}

// Hashes of the tokens in the token tests: distinct ids (first 12 digits).
constexpr char kBobHash[] = "b0b000000000aaaa";
constexpr char kEveHash[] = "e7e000000000aaaa";

TEST_F(SqliteStoreTest, TokensAreLookedUpByHash) {
  ASSERT_TRUE(store_
                  ->CreateToken(kBobHash, "bob", v1::ROLE_USER, 1,
                                /*expires_ms=*/500)
                  .ok());
  absl::StatusOr<TokenInfo> info = store_->LookupToken(kBobHash);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->id, "b0b000000000");
  EXPECT_EQ(info->user, "bob");
  EXPECT_EQ(info->role, v1::ROLE_USER);
  EXPECT_EQ(info->expires_ms, 500);
  EXPECT_EQ(info->revoked_ms, 0);
  EXPECT_TRUE(absl::IsNotFound(store_->LookupToken("other").status()));
  EXPECT_EQ(store_->CreateToken(kBobHash, "eve", v1::ROLE_ADMIN, 1, 0).code(),
            absl::StatusCode::kAlreadyExists);
  // Another hash with the same first 12 digits would make ids ambiguous.
  EXPECT_EQ(store_->CreateToken("b0b000000000bbbb", "eve", v1::ROLE_ADMIN, 1, 0)
                .code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(*store_->CountTokens(), 1);
}

TEST_F(SqliteStoreTest, TokensAreListedRevokedAndTheirLastUseOnlyMovesOn) {
  ASSERT_TRUE(store_->CreateToken(kBobHash, "bob", v1::ROLE_USER, 10, 0).ok());
  ASSERT_TRUE(
      store_->CreateToken(kEveHash, "eve", v1::ROLE_ADMIN, 20, 900).ok());
  absl::StatusOr<std::vector<v1::TokenInfo>> all = store_->ListTokens("");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id(), "b0b000000000");
  EXPECT_EQ((*all)[1].user(), "eve");
  EXPECT_EQ((*all)[1].created_unix_ms(), 20);
  EXPECT_EQ((*all)[1].expires_unix_ms(), 900);
  EXPECT_EQ(store_->ListTokens("bob")->size(), 1u);
  EXPECT_TRUE(store_->ListTokens("nobody")->empty());

  ASSERT_TRUE(store_->RecordTokensUsed({{kBobHash, 300}, {"gone", 5}}).ok());
  ASSERT_TRUE(store_->RecordTokensUsed({{kBobHash, 200}}).ok());
  EXPECT_EQ(store_->GetToken("b0b000000000")->last_used_unix_ms(), 300);

  absl::StatusOr<v1::TokenInfo> revoked =
      store_->RevokeToken("b0b000000000", 400);
  ASSERT_TRUE(revoked.ok()) << revoked.status();
  EXPECT_EQ(revoked->revoked_unix_ms(), 400);
  EXPECT_EQ(store_->LookupToken(kBobHash)->revoked_ms, 400);
  EXPECT_EQ(store_->RevokeToken("b0b000000000", 450)->revoked_unix_ms(), 400);
  EXPECT_TRUE(absl::IsNotFound(store_->GetToken("000000000000").status()));
  EXPECT_TRUE(
      absl::IsNotFound(store_->RevokeToken("000000000000", 1).status()));
  // Eve's is the only admin token: refused while usable, allowed once it
  // has expired (it locks nobody out any more).
  EXPECT_TRUE(absl::IsFailedPrecondition(
      store_->RevokeToken("e7e000000000", 899).status()));
  EXPECT_EQ(store_->GetToken("e7e000000000")->revoked_unix_ms(), 0);
  EXPECT_TRUE(store_->RevokeToken("e7e000000000", 900).ok());
}

TEST(SqliteStoreMigrationTest, V8TokensGetTheirIdAndNeverExpire) {
  TempDir dir;
  const std::string path = dir.File("v8.db");
  const std::string hash(64, 'c');
  {
    absl::StatusOr<std::unique_ptr<internal::Connection>> conn =
        internal::Connection::Open(path, internal::Connection::Options{});
    ASSERT_TRUE(conn.ok()) << conn.status();
    ASSERT_TRUE(internal::Migrate(conn->get(), 8).ok());
    ASSERT_TRUE((*conn)
                    ->Exec(absl::StrCat("INSERT INTO users VALUES ('admin', 1);"
                                        "INSERT INTO tokens VALUES ('",
                                        hash, "', 'admin', 1, 7);")
                               .c_str())
                    .ok());
  }
  EXPECT_EQ(QueryInt(path, "SELECT MAX(version) FROM schema_migrations"), 8);
  std::unique_ptr<SqliteStore> store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->SchemaVersion(), kSchemaVersion);
  absl::StatusOr<TokenInfo> info = store->LookupToken(hash);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->id, std::string(12, 'c'));
  EXPECT_EQ(info->role, v1::ROLE_ADMIN);
  EXPECT_EQ(info->expires_ms, 0);
  EXPECT_EQ(info->revoked_ms, 0);
  absl::StatusOr<v1::TokenInfo> listed = store->GetToken(std::string(12, 'c'));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->created_unix_ms(), 7);
  EXPECT_EQ(listed->last_used_unix_ms(), 0);
  // The migrated token is the last admin token: it stays unrevokable.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      store->RevokeToken(std::string(12, 'c'), 10).status()));
}

TEST_F(SqliteStoreTest, LeaseTakesLowestQueuedTrialAndCountsAttempts) {
  const int64_t id =
      CreateOrDie(MakeExperiment("alice", {"4x4", "2x2,4x2"}, {1}));
  const v1::Trial first = LeaseOrDie(id, "w1");
  EXPECT_EQ(first.state(), v1::TRIAL_LEASED);
  EXPECT_EQ(first.attempt(), 1);
  EXPECT_EQ(first.worker_id(), "w1");
  EXPECT_EQ(first.lease_deadline_unix_ms(), 32000);
  const v1::Trial second = LeaseOrDie(id, "w2");
  EXPECT_GT(second.id(), first.id());
  absl::StatusOr<std::optional<v1::Trial>> none =
      store_->LeaseNextTrial(id, "w1", 2000, 32000);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(store_->GetWorker("w1")->current_trial_id(), first.id());
  EXPECT_EQ((*store_->CountLiveTrialsByUser())["alice"], 2);
}

TEST_F(SqliteStoreTest, UsageSpansAndUserPoliciesSurviveAReopen) {
  const int64_t id =
      CreateOrDie(MakeExperiment("alice", {"4x4", "2x2,4x2"}, {1}));
  const v1::Trial first = LeaseOrDie(id, "w1", /*now_ms=*/2000);
  LeaseOrDie(id, "w2", /*now_ms=*/2500);
  ASSERT_TRUE(store_
                  ->ReleaseTrial(AttemptRef{first.id(), first.attempt(), "w1"},
                                 "", /*now_ms=*/4000)
                  .ok());
  ASSERT_TRUE(store_->SetUserPolicy("bob", UserPolicy{2.5, 3, 40}, 5000).ok());
  store_.reset();
  store_ = OpenOrDie(path_);
  // The released attempt ended at 4000; the other is live (ended 0).
  absl::StatusOr<std::vector<UsageSpan>> spans = store_->ListUsageSpans(0);
  ASSERT_TRUE(spans.ok()) << spans.status();
  std::vector<std::tuple<std::string, int64_t, int64_t>> got;
  for (const UsageSpan& u : *spans) {
    got.emplace_back(u.owner, u.started_ms, u.ended_ms);
  }
  std::sort(got.begin(), got.end());
  EXPECT_THAT(got, ElementsAre(std::make_tuple("alice", 2000, 4000),
                               std::make_tuple("alice", 2500, 0)));
  // Ended before the horizon: only the live one.
  EXPECT_EQ(store_->ListUsageSpans(4001)->size(), 1u);
  absl::StatusOr<std::map<std::string, UserPolicy>> policies =
      store_->ListUserPolicies();
  ASSERT_TRUE(policies.ok()) << policies.status();
  EXPECT_EQ(policies->at("bob").share, 2.5);
  EXPECT_EQ(policies->at("bob").max_running, 3);
  EXPECT_EQ(policies->at("bob").max_queued, 40);
  EXPECT_EQ(policies->at("alice").share, 1.0);  // the default
  EXPECT_EQ(*store_->CountQueuedTrialsOf("alice"), 1);
  EXPECT_EQ(*store_->CountQueuedTrialsOf("bob"), 0);
}

TEST_F(SqliteStoreTest, PausedExperimentIsNotLeased) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  ASSERT_TRUE(store_->SetExperimentState(id, v1::EXPERIMENT_PAUSED, 1500).ok());
  EXPECT_TRUE(store_->ListLeaseCandidates()->empty());
  EXPECT_FALSE(store_->LeaseNextTrial(id, "w1", 2000, 3000)->has_value());
  ASSERT_TRUE(store_->SetExperimentState(id, v1::EXPERIMENT_ACTIVE, 1600).ok());
  EXPECT_EQ(store_->ListLeaseCandidates()->size(), 1u);
}

TEST_F(SqliteStoreTest, ReportStoresEachPointOnceAndStartsTheTrial) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  absl::StatusOr<ReportOutcome> first =
      Report(t, "w1",
             {Point(v1::SPLIT_TRAIN, 1, 3.0f), Point(v1::SPLIT_TRAIN, 2, 2.9f),
              Point(v1::SPLIT_VAL, 2, 3.1f)});
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first->status.ok()) << first->status;
  EXPECT_EQ(first->stored, 3);
  EXPECT_EQ(first->duplicates, 0);
  EXPECT_TRUE(first->started);
  absl::StatusOr<ReportOutcome> again = Report(
      t, "w1",
      {Point(v1::SPLIT_TRAIN, 2, 2.9f), Point(v1::SPLIT_TRAIN, 3, 2.8f)});
  ASSERT_TRUE(again->status.ok());
  EXPECT_EQ(again->stored, 1);
  EXPECT_EQ(again->duplicates, 1);
  EXPECT_FALSE(again->started);
  absl::StatusOr<v1::Trial> stored = store_->GetTrial(t.id());
  EXPECT_EQ(stored->state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(stored->last_step(), 3);
  EXPECT_EQ(stored->lease_deadline_unix_ms(), 33000);
  absl::StatusOr<std::vector<v1::LossPoint>> points = store_->GetPoints(t.id());
  ASSERT_EQ(points->size(), 4u);
  EXPECT_EQ((*points)[3].split(), v1::SPLIT_VAL);
}

TEST_F(SqliteStoreTest, ANaNPointIsAnErrorNotADuplicate) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  // SQLite binds NaN as NULL; the NOT NULL column must not swallow it the
  // way INSERT OR IGNORE did (as a "duplicate").
  absl::StatusOr<ReportOutcome> out = Report(
      t, "w1",
      {Point(v1::SPLIT_TRAIN, 1, 3.0f),
       Point(v1::SPLIT_TRAIN, 2, std::numeric_limits<float>::quiet_NaN())});
  EXPECT_FALSE(out.ok() && out->status.ok());
  // The batch is one transaction: nothing of it was stored.
  EXPECT_TRUE(store_->GetPoints(t.id())->empty());
}

// Issue #32: a lease holder cannot store a point, a heartbeat step or a
// completion beyond the trial's budget (100 steps here).
TEST_F(SqliteStoreTest, StepsOutsideTheBudgetAreInvalidAndStoreNothing) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  absl::StatusOr<ReportOutcome> far =
      Report(t, "w1",
             {Point(v1::SPLIT_TRAIN, 1, 3.0f),
              Point(v1::SPLIT_VAL, std::numeric_limits<int64_t>::max(), 3.0f)});
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_TRUE(absl::IsInvalidArgument(far->status)) << far->status;
  EXPECT_THAT(std::string(far->status.message()),
              HasSubstr("outside the trial's budget of 100 steps"));
  EXPECT_TRUE(store_->GetPoints(t.id())->empty());
  absl::StatusOr<ReportOutcome> last =
      Report(t, "w1", {Point(v1::SPLIT_VAL, 100, 3.0f)});
  ASSERT_TRUE(last.ok() && last->status.ok());

  const AttemptRef ref{t.id(), t.attempt(), "w1"};
  EXPECT_TRUE(absl::IsInvalidArgument(
      store_->Heartbeat(ref, 101, 2000, 30000).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      store_->StartAttempt(ref, -1, 2000, 30000).status()));
  for (int64_t steps : {int64_t{-1}, int64_t{99}, int64_t{101}}) {
    EXPECT_TRUE(absl::IsInvalidArgument(
        store_->CompleteTrial(ref, TrainedMetrics(steps), {}, 3000).status()))
        << steps;
  }
  v1::TrialMetrics diverged = TrainedMetrics(101);
  diverged.set_diverged(true);
  EXPECT_TRUE(absl::IsInvalidArgument(
      store_->CompleteTrial(ref, diverged, {}, 3000).status()));
  EXPECT_EQ(store_->GetTrial(t.id())->last_step(), 100);
  EXPECT_EQ(store_->GetTrial(t.id())->state(), v1::TRIAL_RUNNING);
  absl::StatusOr<v1::Trial> done =
      store_->CompleteTrial(ref, TrainedMetrics(100), {}, 3000);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::TRIAL_COMPLETED);
}

TEST_F(SqliteStoreTest, ReportFromSupersededAttemptIsRefusedAndWritesNothing) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}, 3));
  const v1::Trial stale = LeaseOrDie(id, "w1", 2000);
  ASSERT_EQ(store_->ExpireLeases(40000)->size(), 1u);
  const v1::Trial fresh = LeaseOrDie(id, "w2", 41000);
  EXPECT_EQ(fresh.attempt(), 2);
  absl::StatusOr<ReportOutcome> out =
      Report(stale, "w1", {Point(v1::SPLIT_TRAIN, 5, 1.0f)});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(out->status.message()), HasSubstr("attempt 1"));
  EXPECT_TRUE(store_->GetPoints(stale.id())->empty());
  absl::StatusOr<HeartbeatResult> hb =
      store_->Heartbeat(AttemptRef{stale.id(), 1, "w1"}, 5, 42000, 72000);
  ASSERT_TRUE(hb.ok());
  EXPECT_TRUE(hb->stop);
  EXPECT_EQ(store_->CompleteTrial(AttemptRef{stale.id(), 1, "w1"}, {}, {}, 1)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->FailTrial(AttemptRef{stale.id(), 1, "w1"}, "x", true, 1)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(SqliteStoreTest, ReportForUnknownTrialIsNotFoundInItsOutcomeOnly) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  ReportWrite good;
  good.ref = AttemptRef{t.id(), 1, "w1"};
  good.points = {Point(v1::SPLIT_TRAIN, 1, 1.0f)};
  ReportWrite bad;
  bad.ref = AttemptRef{999, 1, "w1"};
  bad.points = {Point(v1::SPLIT_TRAIN, 1, 1.0f)};
  absl::StatusOr<std::vector<ReportOutcome>> out =
      store_->WriteReports({&good, &bad});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE((*out)[0].status.ok());
  EXPECT_EQ((*out)[0].stored, 1);
  EXPECT_TRUE(absl::IsNotFound((*out)[1].status));
}

TEST_F(SqliteStoreTest, CompleteStoresValCurveAndIsIdempotent) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {7}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  ASSERT_TRUE(Report(t, "w1", {Point(v1::SPLIT_VAL, 50, 3.5f)})->status.ok());
  v1::TrialMetrics m;
  m.set_final_val_loss(3.25);
  m.set_min_val_loss(3.2);
  m.set_tokens_per_second(1234.0);
  m.set_steps(100);
  m.add_attention_distance(1.5);
  m.add_attention_distance(4.25);
  // Fields ranking does not read, of every wire type, around the ones it
  // does: only the ranking ones are copied into columns.
  m.set_mfu(0.5);
  m.set_peak_memory_bytes(int64_t{1} << 40);
  m.add_milestones()->set_target(3.3);
  m.mutable_milestones(0)->set_step(80);
  m.set_device("cuda:0");
  m.set_cpu_share(0.5);
  m.set_final_train_loss(3.0);
  const AttemptRef ref{t.id(), 1, "w1"};
  absl::StatusOr<v1::Trial> done = store_->CompleteTrial(
      ref, m,
      {Point(v1::SPLIT_VAL, 100, 3.25f), Point(v1::SPLIT_VAL, 50, 3.5f)}, 5000);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::TRIAL_COMPLETED);
  EXPECT_EQ(done->last_step(), 100);
  EXPECT_EQ(done->finished_unix_ms(), 5000);
  ASSERT_EQ(done->attempts_size(), 1);
  EXPECT_EQ(done->attempts(0).outcome(), v1::TRIAL_COMPLETED);
  // The ack was lost; the worker sends Complete again.
  absl::StatusOr<v1::Trial> again = store_->CompleteTrial(ref, m, {}, 6000);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->finished_unix_ms(), 5000);

  absl::StatusOr<std::vector<TrialOutcome>> outcomes =
      store_->ListFinishedOutcomes(id);
  ASSERT_EQ(outcomes->size(), 1u);
  const TrialOutcome& o = (*outcomes)[0];
  EXPECT_EQ(o.seed, 7);
  EXPECT_TRUE(o.is_baseline);
  EXPECT_DOUBLE_EQ(o.final_val_loss, 3.25);
  EXPECT_DOUBLE_EQ(o.min_val_loss, 3.2);
  EXPECT_DOUBLE_EQ(o.tokens_per_second, 1234.0);
  EXPECT_THAT(o.val_steps, ElementsAre(50, 100));
  EXPECT_THAT(o.val_losses, ElementsAre(3.5, 3.25));
  EXPECT_THAT(o.attention_distance, ElementsAre(1.5, 4.25));
  EXPECT_EQ(o.state, OutcomeState::kCompleted);
  // Where it ran, for pairing tokens/s on hardware.
  EXPECT_EQ(o.worker_id, "w1");
  EXPECT_EQ(o.device, "cuda:0");
  EXPECT_EQ(o.cpu_share, 0.5);
  EXPECT_EQ(*store_->CountFinished(id), 1);
  // The only trial finished: the experiment is done and the worker idle.
  EXPECT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_DONE);
  EXPECT_DOUBLE_EQ(store_->GetExperiment(id)->progress(), 1.0);
  EXPECT_EQ(store_->GetWorker("w1")->current_trial_id(), 0);
}

TEST_F(SqliteStoreTest, ThroughputSamplesAreTheLatestCompletedWithTheirSpec) {
  NewExperiment small = MakeExperiment("alice", {"8x8", "4x8"}, {1});
  small.spec.mutable_model()->set_preset("small");
  small.spec.mutable_budget()->set_batch_size(8);
  const int64_t tiny_id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const int64_t small_id = CreateOrDie(small);
  const auto complete = [&](int64_t experiment, double tps, bool diverged) {
    const v1::Trial t = LeaseOrDie(experiment, "w1");
    v1::TrialMetrics m = TrainedMetrics(diverged ? 50 : 100);
    m.set_tokens_per_second(tps);
    m.set_device("cpu (1 thread)");
    m.set_diverged(diverged);
    ASSERT_TRUE(
        store_->CompleteTrial(AttemptRef{t.id(), 1, "w1"}, m, {}, 5000).ok());
  };
  complete(tiny_id, 1000.0, false);
  complete(small_id, 0.0, false);   // no throughput reported: left out
  complete(small_id, 500.0, true);  // diverged: left out
  absl::StatusOr<std::vector<ThroughputSample>> samples =
      store_->ListThroughputSamples(10);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ((*samples)[0].experiment_id, tiny_id);
  EXPECT_DOUBLE_EQ((*samples)[0].tokens_per_second, 1000.0);
  EXPECT_EQ((*samples)[0].device, "cpu (1 thread)");
  EXPECT_EQ((*samples)[0].model.preset(), "tiny");
  EXPECT_EQ((*samples)[0].budget.steps(), 100);

  const int64_t again = CreateOrDie(small);
  complete(again, 2000.0, false);
  samples = store_->ListThroughputSamples(10);
  ASSERT_EQ(samples->size(), 2u);
  // Newest first, each with its own experiment's spec.
  EXPECT_EQ((*samples)[0].experiment_id, again);
  EXPECT_EQ((*samples)[0].model.preset(), "small");
  EXPECT_EQ((*samples)[0].budget.batch_size(), 8);
  EXPECT_EQ((*samples)[1].model.preset(), "tiny");
  // The limit holds.
  EXPECT_EQ(store_->ListThroughputSamples(1)->size(), 1u);
}

TEST_F(SqliteStoreTest, DivergedMetricsMarkTheTrialDiverged) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  v1::TrialMetrics m;
  m.set_diverged(true);
  absl::StatusOr<v1::Trial> done =
      store_->CompleteTrial(AttemptRef{t.id(), 1, "w1"}, m, {}, 5000);
  EXPECT_EQ(done->state(), v1::TRIAL_DIVERGED);
  EXPECT_EQ(QueryInt(path_, absl::StrCat("SELECT diverged FROM trials WHERE "
                                         "id = ",
                                         t.id())),
            1);
  absl::StatusOr<std::vector<TrialOutcome>> outcomes =
      store_->ListFinishedOutcomes(id);
  ASSERT_EQ(outcomes->size(), 1u);
  EXPECT_EQ((*outcomes)[0].state, OutcomeState::kDiverged);
  EXPECT_EQ(*store_->CountFinished(id), 1);
}

TEST_F(SqliteStoreTest, ExpiryStandsDownWhenProceedSaysNoUnderTheLock) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}, 2));
  const v1::Trial t = LeaseOrDie(id, "w1", 2000);  // deadline 32000
  int asked = 0;
  EXPECT_TRUE(store_
                  ->ExpireLeases(40000,
                                 [&] {
                                   ++asked;
                                   return false;
                                 })
                  ->empty());
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(store_->GetTrial(t.id())->state(), v1::TRIAL_LEASED);
  EXPECT_EQ(store_->ExpireLeases(40000, [] { return true; })->size(), 1u);
  EXPECT_EQ(store_->GetTrial(t.id())->state(), v1::TRIAL_QUEUED);
}

TEST_F(SqliteStoreTest, ExpiryRequeuesWithNextAttemptThenFailsAtMaxAttempts) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}, 2));
  const v1::Trial t = LeaseOrDie(id, "w1", 2000);  // deadline 32000
  EXPECT_TRUE(store_->ExpireLeases(31999)->empty());
  absl::StatusOr<std::vector<ExpiredLease>> first = store_->ExpireLeases(32001);
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].trial.state(), v1::TRIAL_QUEUED);
  EXPECT_EQ((*first)[0].worker_id, "w1");
  EXPECT_EQ(store_->GetWorker("w1")->current_trial_id(), 0);
  const v1::Trial second = LeaseOrDie(id, "w2", 33000);
  EXPECT_EQ(second.id(), t.id());
  EXPECT_EQ(second.attempt(), 2);
  absl::StatusOr<std::vector<ExpiredLease>> last = store_->ExpireLeases(70000);
  ASSERT_EQ(last->size(), 1u);
  EXPECT_EQ((*last)[0].trial.state(), v1::TRIAL_FAILED);
  absl::StatusOr<v1::Trial> failed = store_->GetTrial(t.id());
  EXPECT_THAT(failed->error(), HasSubstr("2 of 2 allowed attempts failed"));
  ASSERT_EQ(failed->attempts_size(), 2);
  EXPECT_EQ(failed->attempts(0).worker_id(), "w1");
  EXPECT_EQ(failed->attempts(1).worker_id(), "w2");
  EXPECT_EQ(failed->attempts(1).outcome(), v1::TRIAL_FAILED);
  EXPECT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_DONE);
  // Ranking counts the failed trial.
  absl::StatusOr<std::vector<TrialOutcome>> outcomes =
      store_->ListFinishedOutcomes(id);
  ASSERT_EQ(outcomes->size(), 1u);
  EXPECT_EQ((*outcomes)[0].state, OutcomeState::kFailed);
  EXPECT_EQ(*store_->CountFinished(id), 1);
}

TEST_F(SqliteStoreTest, HeartbeatMovesToRunningAndRenewsTheDeadline) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1", 2000);
  absl::StatusOr<HeartbeatResult> hb =
      store_->Heartbeat(AttemptRef{t.id(), 1, "w1"}, 10, 20000, 50000);
  ASSERT_TRUE(hb.ok());
  EXPECT_FALSE(hb->stop);
  EXPECT_EQ(hb->lease_deadline_ms, 50000);
  absl::StatusOr<v1::Trial> running = store_->GetTrial(t.id());
  EXPECT_EQ(running->state(), v1::TRIAL_RUNNING);
  EXPECT_EQ(running->last_step(), 10);
  EXPECT_EQ(running->started_unix_ms(), 20000);
  EXPECT_TRUE(store_->ExpireLeases(40000)->empty());
  EXPECT_TRUE(absl::IsNotFound(
      store_->Heartbeat(AttemptRef{999, 1, "w1"}, 1, 1, 1).status()));
}

TEST_F(SqliteStoreTest, RetryableFailureRequeuesUntilAttemptsRunOut) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}, 2));
  const v1::Trial t = LeaseOrDie(id, "w1");
  absl::StatusOr<v1::Trial> requeued =
      store_->FailTrial(AttemptRef{t.id(), 1, "w1"}, "oom", true, 3000);
  EXPECT_EQ(requeued->state(), v1::TRIAL_QUEUED);
  const v1::Trial again = LeaseOrDie(id, "w1", 4000);
  absl::StatusOr<v1::Trial> failed =
      store_->FailTrial(AttemptRef{again.id(), 2, "w1"}, "oom", true, 5000);
  EXPECT_EQ(failed->state(), v1::TRIAL_FAILED);
  EXPECT_EQ(failed->error(), "oom");
}

TEST_F(SqliteStoreTest, StartRecordsTheResumedStepOnTheOpenAttempt) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1", 2000);
  // Unknown until the worker says: no guess from the coordinator.
  EXPECT_FALSE(store_->GetTrial(t.id())->attempts(0).has_resumed_from_step());
  absl::StatusOr<int64_t> deadline =
      store_->StartAttempt(AttemptRef{t.id(), 1, "w1"}, 0, 3000, 40000);
  ASSERT_TRUE(deadline.ok()) << deadline.status();
  EXPECT_EQ(*deadline, 40000);
  absl::StatusOr<v1::Trial> started = store_->GetTrial(t.id());
  EXPECT_EQ(started->state(), v1::TRIAL_RUNNING);
  ASSERT_TRUE(started->attempts(0).has_resumed_from_step());
  EXPECT_EQ(started->attempts(0).resumed_from_step(), 0);

  ASSERT_EQ(store_->ExpireLeases(50000)->size(), 1u);
  const v1::Trial again = LeaseOrDie(id, "w2", 51000);
  ASSERT_TRUE(
      store_->StartAttempt(AttemptRef{t.id(), 2, "w2"}, 20, 52000, 90000).ok());
  started = store_->GetTrial(t.id());
  ASSERT_EQ(started->attempts_size(), 2);
  EXPECT_EQ(started->attempts(0).resumed_from_step(), 0);
  EXPECT_EQ(started->attempts(1).resumed_from_step(), 20);
  EXPECT_TRUE(absl::IsFailedPrecondition(
      store_->StartAttempt(AttemptRef{t.id(), 1, "w1"}, 5, 53000, 90000)
          .status()));
  EXPECT_EQ(store_->GetTrial(again.id())->attempts(1).resumed_from_step(), 20);
}

TEST_F(SqliteStoreTest, ReleasesRequeueAndDoNotCountTowardMaxAttempts) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}, 2));
  int64_t now = 2000;
  int64_t trial_id = 0;
  for (int i = 1; i <= 5; ++i) {
    const v1::Trial t = LeaseOrDie(id, "w1", now);
    trial_id = t.id();
    EXPECT_EQ(t.attempt(), i);
    absl::StatusOr<v1::Trial> released = store_->ReleaseTrial(
        AttemptRef{t.id(), i, "w1"}, "worker shut down at step 7", ++now);
    ASSERT_TRUE(released.ok()) << released.status();
    EXPECT_EQ(released->state(), v1::TRIAL_QUEUED);
    EXPECT_EQ(released->attempts(i - 1).outcome(), v1::TRIAL_QUEUED);
    EXPECT_EQ(released->attempts(i - 1).message(),
              "released by worker: worker shut down at step 7");
    EXPECT_EQ(store_->GetWorker("w1")->current_trial_id(), 0);
  }
  // A release by a stale attempt is refused like any other write.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      store_->ReleaseTrial(AttemptRef{trial_id, 5, "w1"}, "", now).status()));
  // Two real failures still end it: the first requeues, the second fails.
  const v1::Trial sixth = LeaseOrDie(id, "w1", ++now);
  EXPECT_EQ(store_->FailTrial(AttemptRef{trial_id, 6, "w1"}, "oom", true, ++now)
                ->state(),
            v1::TRIAL_QUEUED);
  const v1::Trial seventh = LeaseOrDie(id, "w2", ++now);
  ASSERT_EQ(seventh.attempt(), 7);
  ASSERT_EQ(store_->ExpireLeases(now + 60000)->size(), 1u);
  absl::StatusOr<v1::Trial> failed = store_->GetTrial(sixth.id());
  EXPECT_EQ(failed->state(), v1::TRIAL_FAILED);
  EXPECT_THAT(failed->error(), HasSubstr("2 of 2 allowed attempts failed"));
  EXPECT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_DONE);
}

TEST_F(SqliteStoreTest, CancelStopsLiveTrialsAndCancelsQueuedOnes) {
  const int64_t id =
      CreateOrDie(MakeExperiment("alice", {"4x4", "2x2,4x2"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  absl::StatusOr<v1::Experiment> e = store_->CancelExperiment(id, 3000);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->state(), v1::EXPERIMENT_CANCELLED);
  EXPECT_EQ(e->counts().cancelled(), 2);
  absl::StatusOr<HeartbeatResult> hb =
      store_->Heartbeat(AttemptRef{t.id(), 1, "w1"}, 5, 4000, 34000);
  EXPECT_TRUE(hb->stop);
  EXPECT_EQ(store_->SetExperimentState(id, v1::EXPERIMENT_ACTIVE, 5000)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store_->CountQueued(), 0);
}

// Issue 41: a cancelled experiment's progress counts what its trials
// trained, not 100%: a cancelled trial counts the share of its steps it
// trained (none for one that never ran), a completed one counts whole.
TEST_F(SqliteStoreTest, CancelledTrialsCountOnlyTheStepsTheyTrainedInProgress) {
  const int64_t id =
      CreateOrDie(MakeExperiment("alice", {"4x4", "2x2,4x2"}, {1, 2}));
  const v1::Trial done = LeaseOrDie(id, "w1");
  ASSERT_TRUE(store_
                  ->CompleteTrial(AttemptRef{done.id(), 1, "w1"},
                                  TrainedMetrics(), {}, 2000)
                  .ok());
  const v1::Trial half = LeaseOrDie(id, "w2", 2100);
  ASSERT_GT(half.total_steps(), 1);
  ASSERT_TRUE(store_
                  ->Heartbeat(AttemptRef{half.id(), 1, "w2"},
                              half.total_steps() / 2, 2200, 32200)
                  .ok());
  const double trained_share =
      static_cast<double>(half.total_steps() / 2) / half.total_steps();
  absl::StatusOr<v1::Experiment> e = store_->CancelExperiment(id, 3000);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->counts().completed(), 1);
  EXPECT_EQ(e->counts().cancelled(), 3);
  EXPECT_DOUBLE_EQ(e->progress(), (1.0 + trained_share) / 4);
  EXPECT_DOUBLE_EQ(store_->GetExperiment(id)->progress(),
                   (1.0 + trained_share) / 4);
  EXPECT_LT(store_->GetExperiment(id)->progress(), 0.5);
}

TEST_F(SqliteStoreTest, DeleteRemovesEveryRowOfAFinishedExperimentOnly) {
  const int64_t kept = CreateOrDie(MakeExperiment("bob", {"4x4"}, {1}));
  const int64_t id =
      CreateOrDie(MakeExperiment("alice", {"4x4", "2x2,4x2"}, {1, 2}));
  const v1::Trial t = LeaseOrDie(id, "w1");
  ASSERT_TRUE(
      Report(t, "w1",
             {Point(v1::SPLIT_VAL, 0, 4.0f), Point(v1::SPLIT_TRAIN, 1, 3.9f)})
          .ok());

  absl::StatusOr<DeletedExperiment> active = store_->DeleteExperiment(id);
  EXPECT_EQ(active.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(active.status().message(), HasSubstr("cancel it first"));
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM points"), 2);
  EXPECT_EQ(store_->DeleteExperiment(id + 100).status().code(),
            absl::StatusCode::kNotFound);

  ASSERT_TRUE(store_->CancelExperiment(id, 3000).ok());
  absl::StatusOr<DeletedExperiment> deleted = store_->DeleteExperiment(id);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->experiment.id(), id);
  EXPECT_EQ(deleted->experiment.owner(), "alice");
  EXPECT_EQ(deleted->trials, 4);
  EXPECT_EQ(deleted->attempts, 1);
  EXPECT_EQ(deleted->points, 2);

  // Only the kept experiment's row and trial remain.
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM experiments"), 1);
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM trials"), 1);
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM trial_attempts"), 0);
  EXPECT_EQ(QueryInt(path_, "SELECT COUNT(*) FROM points"), 0);
  EXPECT_EQ(store_->GetExperiment(id).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetTrial(t.id()).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetExperiment(kept)->counts().total(), 1);
  // Its worker time stays alice's for fair share: the attempt, leased at
  // 2000, ends at the cancel (3000).
  absl::StatusOr<std::vector<UsageSpan>> spans = store_->ListUsageSpans(0);
  ASSERT_TRUE(spans.ok()) << spans.status();
  ASSERT_EQ(spans->size(), 1u);
  EXPECT_EQ((*spans)[0].owner, "alice");
  EXPECT_EQ((*spans)[0].started_ms, 2000);
  EXPECT_EQ((*spans)[0].ended_ms, 3000);
  EXPECT_EQ(store_->ListUsageSpans(3001)->size(), 0u);
  // The worker that held the cancelled trial holds nothing now.
  EXPECT_EQ(store_->GetWorker("w1")->current_trial_id(), 0);
  EXPECT_EQ(store_->DeleteExperiment(id).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, ADeletedExperimentsIdsAreNeverGivenAgain) {
  CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1, 2}));
  const int64_t last_trial = QueryInt(path_, "SELECT MAX(id) FROM trials");
  ASSERT_TRUE(store_->CancelExperiment(id, 3000).ok());
  ASSERT_TRUE(store_->DeleteExperiment(id).ok());
  // Without retired_ids SQLite would hand out the deleted (highest) ids.
  const int64_t next = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  EXPECT_EQ(next, id + 1);
  EXPECT_EQ(QueryInt(path_,
                     "SELECT MIN(id) FROM trials WHERE "
                     "experiment_id = " +
                         std::to_string(next)),
            last_trial + 1);
  // And across a reopen.
  ASSERT_TRUE(store_->CancelExperiment(next, 3000).ok());
  ASSERT_TRUE(store_->DeleteExperiment(next).ok());
  store_.reset();
  store_ = OpenOrDie(path_);
  EXPECT_EQ(CreateOrDie(MakeExperiment("alice", {"4x4"}, {1})), next + 1);
}

TEST_F(SqliteStoreTest, ExtendLiveLeasesPushesDeadlinesForward) {
  const int64_t id = CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  const v1::Trial t = LeaseOrDie(id, "w1", 2000);
  EXPECT_EQ(*store_->ExtendLiveLeases(100000), 1);
  EXPECT_EQ(store_->GetTrial(t.id())->lease_deadline_unix_ms(), 100000);
  EXPECT_TRUE(store_->ExpireLeases(90000)->empty());
}

TEST_F(SqliteStoreTest, ListTrialsPagesAndFiltersByState) {
  const int64_t id = CreateOrDie(
      MakeExperiment("alice", {"4x4", "2x2,4x2", "1x2,4x2"}, {1, 2}));
  LeaseOrDie(id, "w1");
  absl::StatusOr<TrialPage> page =
      store_->ListTrials(id, v1::TRIAL_STATE_UNSPECIFIED, 4, 0);
  ASSERT_EQ(page->trials.size(), 4u);
  EXPECT_EQ(page->total, 6);
  ASSERT_NE(page->next_after_id, 0);
  absl::StatusOr<TrialPage> rest = store_->ListTrials(
      id, v1::TRIAL_STATE_UNSPECIFIED, 4, page->next_after_id);
  EXPECT_EQ(rest->trials.size(), 2u);
  EXPECT_EQ(rest->next_after_id, 0);
  absl::StatusOr<TrialPage> queued =
      store_->ListTrials(id, v1::TRIAL_QUEUED, 10, 0);
  EXPECT_EQ(queued->total, 5);
  absl::StatusOr<v1::Trial> baseline = store_->FindBaselineTrial(id, 2);
  ASSERT_TRUE(baseline.ok());
  EXPECT_EQ(baseline->schedule(), "4x4");
  EXPECT_EQ(baseline->seed(), 2);
}

TEST_F(SqliteStoreTest, ListExperimentsFiltersByOwnerAndPages) {
  CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  CreateOrDie(MakeExperiment("bob", {"4x4"}, {1}));
  CreateOrDie(MakeExperiment("alice", {"4x4"}, {1}));
  absl::StatusOr<ExperimentPage> alice = store_->ListExperiments("alice", 1, 0);
  ASSERT_EQ(alice->experiments.size(), 1u);
  absl::StatusOr<ExperimentPage> alice2 =
      store_->ListExperiments("alice", 1, alice->next_after_id);
  ASSERT_EQ(alice2->experiments.size(), 1u);
  EXPECT_EQ(alice2->experiments[0].owner(), "alice");
  EXPECT_EQ(alice2->next_after_id, 0);
  EXPECT_EQ(store_->ListExperiments("", 10, 0)->experiments.size(), 3u);
}

TEST_F(SqliteStoreTest, WorkersUpsertKeepRegistrationTimeAndTouchUpdates) {
  v1::Worker w;
  w.set_id("w1");
  w.set_host("other-host");
  w.set_device("cpu");
  absl::StatusOr<v1::Worker> stored =
      store_->UpsertWorker(w, 9000, /*take_over=*/false);
  EXPECT_EQ(stored->host(), "other-host");
  EXPECT_EQ(stored->registered_unix_ms(), 1000);
  ASSERT_TRUE(store_->TouchWorker(WorkerUpdate{"w1", 5, 9500, 42.0}).ok());
  absl::StatusOr<v1::Worker> touched = store_->GetWorker("w1");
  EXPECT_EQ(touched->last_heartbeat_unix_ms(), 9500);
  EXPECT_EQ(touched->current_trial_id(), 5);
  EXPECT_DOUBLE_EQ(touched->tokens_per_second(), 42.0);
  EXPECT_TRUE(absl::IsNotFound(store_->TouchWorker(WorkerUpdate{"nope"})));
  EXPECT_EQ(store_->ListWorkers()->size(), 2u);
}

TEST_F(SqliteStoreTest, UpsertWorkerChecksTheOwnerInTheSameWrite) {
  v1::Worker w;
  w.set_id("owned");
  w.set_host("farm-host");
  w.set_user("farm");
  ASSERT_TRUE(store_->UpsertWorker(w, 1000, /*take_over=*/false).ok());
  w.set_host("mallory-host");
  w.set_user("mallory");
  absl::StatusOr<v1::Worker> taken =
      store_->UpsertWorker(w, 2000, /*take_over=*/false);
  EXPECT_TRUE(absl::IsPermissionDenied(taken.status())) << taken.status();
  EXPECT_THAT(std::string(taken.status().message()),
              HasSubstr("belongs to user 'farm'"));
  absl::StatusOr<v1::Worker> kept = store_->GetWorker("owned");
  EXPECT_EQ(kept->user(), "farm");
  EXPECT_EQ(kept->host(), "farm-host");
  EXPECT_EQ(kept->last_heartbeat_unix_ms(), 1000);
  // An admin's registration may take the id over.
  absl::StatusOr<v1::Worker> over =
      store_->UpsertWorker(w, 3000, /*take_over=*/true);
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_EQ(over->user(), "mallory");
}

TEST_F(SqliteStoreTest, AStoppedWorkerHoldsNothingUntilItComesBack) {
  ASSERT_TRUE(store_->TouchWorker(WorkerUpdate{"w1", 5, 9500, 42.0}).ok());
  ASSERT_TRUE(store_->StopWorker("w1", 9600).ok());
  absl::StatusOr<v1::Worker> stopped = store_->GetWorker("w1");
  EXPECT_EQ(stopped->stopped_unix_ms(), 9600);
  EXPECT_EQ(stopped->current_trial_id(), 0);
  EXPECT_EQ(stopped->tokens_per_second(), 0.0);
  EXPECT_EQ(stopped->last_heartbeat_unix_ms(), 9500);
  EXPECT_TRUE(absl::IsNotFound(store_->StopWorker("nope", 9600)));

  // A heartbeat, or registering again, means it runs again.
  ASSERT_TRUE(store_->TouchWorker(WorkerUpdate{"w1", 0, 9700, 0.0}).ok());
  EXPECT_EQ(store_->GetWorker("w1")->stopped_unix_ms(), 0);
  ASSERT_TRUE(store_->StopWorker("w1", 9800).ok());
  v1::Worker w;
  w.set_id("w1");
  w.set_host("host");
  ASSERT_TRUE(store_->UpsertWorker(w, 9900, /*take_over=*/false).ok());
  EXPECT_EQ(store_->GetWorker("w1")->stopped_unix_ms(), 0);
}

TEST_F(SqliteStoreTest,
       ASeedRoundAddsTrialsOnceAndEndsTheExperimentWhenDrained) {
  NewExperiment e = MakeExperiment("alice", {"4x6", "2x2,4x4"}, {1});
  e.spec.mutable_seeds_policy()->set_min(2);
  e.spec.mutable_seeds_policy()->set_max(3);
  const int64_t id = CreateOrDie(e);
  // Finishing every trial does not end an experiment with a seeds policy.
  for (int i = 0; i < 2; ++i) {
    const v1::Trial t = LeaseOrDie(id, "w1");
    ASSERT_TRUE(store_
                    ->CompleteTrial(AttemptRef{t.id(), t.attempt(), "w1"},
                                    TrainedMetrics(), {}, 4000)
                    .ok());
  }
  EXPECT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_ACTIVE);
  absl::StatusOr<std::vector<TrialKey>> keys = store_->ListTrialKeys(id);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].schedule, "4x6");
  EXPECT_TRUE((*keys)[0].is_baseline);
  EXPECT_EQ((*keys)[1].state, v1::TRIAL_COMPLETED);

  SeedRound round;
  round.experiment_id = id;
  round.seen_trials = 2;
  round.seen_finished = 1;  // stale: two have finished
  round.trials = {NewTrial{"2x2,4x4", 2, false}, NewTrial{"4x6", 2, true}};
  round.note = "added seed 2";
  round.now_ms = 5000;
  EXPECT_EQ(store_->ApplySeedRound(round).status().code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(store_->GetExperiment(id)->counts().total(), 2);

  round.seen_finished = 2;
  absl::StatusOr<SeedRoundResult> applied = store_->ApplySeedRound(round);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->added, 2);
  EXPECT_EQ(applied->state, v1::EXPERIMENT_ACTIVE);
  v1::Experiment after = *store_->GetExperiment(id);
  EXPECT_EQ(after.counts().queued(), 2);
  EXPECT_EQ(after.seeds_added(), 2);
  EXPECT_EQ(after.seeds_note(), "added seed 2");

  // The same trials again (as from a round run twice) are not repeated.
  round.seen_trials = 4;
  applied = store_->ApplySeedRound(round);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->added, 0);
  EXPECT_EQ(store_->GetExperiment(id)->counts().total(), 4);

  // A round that adds nothing to a drained experiment ends it.
  for (int i = 0; i < 2; ++i) {
    const v1::Trial t = LeaseOrDie(id, "w1");
    ASSERT_TRUE(store_
                    ->CompleteTrial(AttemptRef{t.id(), t.attempt(), "w1"},
                                    TrainedMetrics(), {}, 6000)
                    .ok());
  }
  EXPECT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_ACTIVE);
  SeedRound last;
  last.experiment_id = id;
  last.seen_trials = 4;
  last.seen_finished = 4;
  last.note = "added no seed";
  applied = store_->ApplySeedRound(last);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->state, v1::EXPERIMENT_DONE);
  EXPECT_EQ(store_->GetExperiment(id)->seeds_note(), "added no seed");
  // A done experiment takes no more trials.
  last.trials = {NewTrial{"2x2,4x4", 3, false}};
  applied = store_->ApplySeedRound(last);
  ASSERT_TRUE(applied.ok());
  EXPECT_EQ(applied->added, 0);
  EXPECT_EQ(store_->GetExperiment(id)->counts().total(), 4);
}

TEST_F(SqliteStoreTest,
       ExtendAddsTrialsStoresTheSpecAndReopensADoneExperiment) {
  const int64_t id =
      CreateOrDie(MakeExperiment("alice", {"4x6", "2x2,4x4"}, {1}));
  for (int i = 0; i < 2; ++i) {
    const v1::Trial t = LeaseOrDie(id, "w1");
    ASSERT_TRUE(store_
                    ->CompleteTrial(AttemptRef{t.id(), t.attempt(), "w1"},
                                    TrainedMetrics(), {}, 4000)
                    .ok());
  }
  ASSERT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_DONE);

  ExperimentExtension x;
  x.experiment_id = id;
  x.spec = store_->GetExperiment(id)->spec();
  x.spec.add_seeds(2);
  x.grid_steps = 400.0;
  // The baseline's seed 1 is stored already: skipped, not repeated.
  x.trials = {NewTrial{"4x6", 2, true}, NewTrial{"2x2,4x4", 2, false},
              NewTrial{"4x6", 1, true}};
  x.seen_trials = 1;  // stale: the experiment has 2 trials
  x.now_ms = 5000;
  EXPECT_EQ(store_->ExtendExperiment(x).status().code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(store_->GetExperiment(id)->counts().total(), 2);
  EXPECT_EQ(store_->GetExperiment(id)->state(), v1::EXPERIMENT_DONE);

  x.seen_trials = 2;
  absl::StatusOr<ExtendedExperiment> extended = store_->ExtendExperiment(x);
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_EQ(extended->added, 2);
  EXPECT_EQ(extended->experiment.state(), v1::EXPERIMENT_ACTIVE);
  EXPECT_EQ(extended->experiment.counts().queued(), 2);
  EXPECT_EQ(extended->experiment.counts().completed(), 2);
  EXPECT_EQ(extended->experiment.spec().seeds_size(), 2);
  EXPECT_EQ(extended->experiment.grid_steps(), 400.0);

  // The new trials train the whole budget with the experiment's
  // fingerprint, and finishing them ends the experiment again.
  for (int i = 0; i < 2; ++i) {
    const v1::Trial t = LeaseOrDie(id, "w1");
    EXPECT_EQ(t.seed(), 2);
    EXPECT_EQ(t.total_steps(), 100);
    ASSERT_TRUE(store_
                    ->CompleteTrial(AttemptRef{t.id(), t.attempt(), "w1"},
                                    TrainedMetrics(), {}, 6000)
                    .ok());
  }
  const v1::Experiment done = *store_->GetExperiment(id);
  EXPECT_EQ(done.state(), v1::EXPERIMENT_DONE);
  EXPECT_EQ(done.counts().completed(), 4);
  absl::StatusOr<std::vector<TrialOutcome>> outcomes =
      store_->ListFinishedOutcomes(id);
  ASSERT_TRUE(outcomes.ok());
  EXPECT_EQ(outcomes->size(), 4u);
}

TEST_F(SqliteStoreTest,
       ExtendKeepsAPausedExperimentPausedAndRefusesACancelledOne) {
  const int64_t paused = CreateOrDie(MakeExperiment("alice", {"4x6"}, {1}));
  ASSERT_TRUE(
      store_->SetExperimentState(paused, v1::EXPERIMENT_PAUSED, 2000).ok());
  ExperimentExtension x;
  x.experiment_id = paused;
  x.spec = store_->GetExperiment(paused)->spec();
  x.trials = {NewTrial{"4x6", 2, true}};
  x.seen_trials = 1;
  x.now_ms = 3000;
  absl::StatusOr<ExtendedExperiment> extended = store_->ExtendExperiment(x);
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_EQ(extended->experiment.state(), v1::EXPERIMENT_PAUSED);
  EXPECT_EQ(extended->experiment.counts().queued(), 2);

  const int64_t cancelled = CreateOrDie(MakeExperiment("alice", {"4x6"}, {1}));
  ASSERT_TRUE(store_->CancelExperiment(cancelled, 2000).ok());
  x.experiment_id = cancelled;
  const absl::Status refused = store_->ExtendExperiment(x).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_EQ(store_->GetExperiment(cancelled)->counts().total(), 1);
  x.experiment_id = 999;
  EXPECT_EQ(store_->ExtendExperiment(x).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, AnAshaTrialWaitsAtItsRungUntilAPromotionRequeuesIt) {
  NewExperiment e = MakeExperiment("alice", {"4x6", "2x2,4x4"}, {1});
  e.spec.set_strategy(v1::STRATEGY_ASHA);
  e.trials[1].target_steps = 20;
  const int64_t id = CreateOrDie(e);
  LeaseOrDie(id, "w1");  // the baseline, left running
  const v1::Trial t = LeaseOrDie(id, "w2");
  EXPECT_EQ(t.target_steps(), 20);
  v1::TrialMetrics metrics;
  metrics.set_steps(20);
  metrics.set_final_val_loss(2.5);
  v1::LossPoint val;
  val.set_split(v1::SPLIT_VAL);
  val.set_step(20);
  val.set_loss(2.5f);
  absl::StatusOr<v1::Trial> stopped = store_->CompleteTrial(
      AttemptRef{t.id(), t.attempt(), "w2"}, metrics, {val}, 3000);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->state(), v1::TRIAL_STOPPED_AT_RUNG);
  EXPECT_EQ(stopped->attempts(0).outcome(), v1::TRIAL_STOPPED_AT_RUNG);
  EXPECT_EQ(store_->GetExperiment(id)->counts().stopped_at_rung(), 1);
  // Not finished: not ranked, and a re-sent Complete is answered again.
  EXPECT_TRUE(store_->ListFinishedOutcomes(id)->empty());
  EXPECT_TRUE(store_
                  ->CompleteTrial(AttemptRef{t.id(), t.attempt(), "w2"},
                                  metrics, {val}, 3001)
                  .ok());

  absl::StatusOr<std::vector<AshaTrial>> asha =
      store_->ListAshaTrials(id, {20});
  ASSERT_TRUE(asha.ok()) << asha.status();
  ASSERT_EQ(asha->size(), 2u);
  EXPECT_FALSE((*asha)[0].at_rung);
  EXPECT_TRUE((*asha)[1].at_rung);
  EXPECT_EQ((*asha)[1].target_steps, 20);
  EXPECT_DOUBLE_EQ((*asha)[1].val_loss.at(20), 2.5);

  SeedRound round;
  round.experiment_id = id;
  round.seen_trials = 2;
  round.seen_finished = 1;  // the trial at its rung counts
  round.promotions = {AshaPromotion{"2x2,4x4", 20, 0}};
  round.now_ms = 4000;
  absl::StatusOr<SeedRoundResult> applied = store_->ApplySeedRound(round);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->promoted, 1);
  // The same promotion again moves nothing: the trial left the rung.
  round.seen_finished = 0;
  applied = store_->ApplySeedRound(round);
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ(applied->promoted, 0);

  const v1::Trial again = LeaseOrDie(id, "w2");
  EXPECT_EQ(again.id(), t.id());
  EXPECT_EQ(again.attempt(), 2);
  EXPECT_EQ(again.target_steps(), 0);
  EXPECT_EQ(again.last_step(), 20);  // the next attempt resumes here
  metrics.set_steps(100);
  absl::StatusOr<v1::Trial> done = store_->CompleteTrial(
      AttemptRef{again.id(), again.attempt(), "w2"}, metrics, {}, 5000);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::TRIAL_COMPLETED);
}

// Issue #40: the database holds token hashes and every result. It and the
// files SQLite and the store keep beside it (-wal, -shm, .lock) are the
// owner's alone, whatever the umask: SQLite would create the database 0644
// less the umask, and gives -wal and -shm the database's mode.
TEST(SqliteStoreFilesTest, DatabaseWalShmAndLockArePrivateUnderAnyUmask) {
  TempDir dir;
  const std::string path = dir.File("prism.db");
  ::prism::testing::ScopedUmask open_to_all(0);
  std::unique_ptr<SqliteStore> store = OpenOrDie(path);
  ASSERT_NE(store, nullptr);
  // A write, so that the WAL and its index exist.
  ASSERT_TRUE(store
                  ->CreateToken("b0b000000000aaaa", "bob", v1::ROLE_USER, 1,
                                /*expires_ms=*/0)
                  .ok());
  for (const char* suffix : {"", "-wal", "-shm", ".lock"}) {
    EXPECT_EQ(::prism::testing::ModeOf(path + suffix), 0600) << suffix;
  }
}

// A database an older version created 0644 is tightened when it is opened,
// and the log says so, once per file.
TEST(SqliteStoreFilesTest, AnOlderDatabaseOpenToOthersIsMadePrivateWithALog) {
  TempDir dir;
  const std::string path = dir.File("prism.db");
  OpenOrDie(path).reset();
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  ::testing::internal::CaptureStderr();
  std::unique_ptr<SqliteStore> store = OpenOrDie(path);
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(::prism::testing::ModeOf(path), 0600);
  EXPECT_THAT(log, HasSubstr("level=warning msg=\"database file was open to "
                             "other users; made it private\" file=" +
                             path + " mode_was=0644 mode=0600\n"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
  // Private already: nothing to say the next time.
  store.reset();
  ::testing::internal::CaptureStderr();
  OpenOrDie(path).reset();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace prism::storage
