// Store: the coordinator's durable state — users and hashed tokens,
// experiments (their resolved spec), trials and their attempt history, loss
// curves and workers — behind typed interfaces, so server/ never writes SQL
// and its tests may pass a fake. SqliteStore (sqlite_store.h) is the real
// one.
//
// Store is the sum of five role interfaces, one per concern, and each
// server/core manager takes only the roles it calls:
//   TokenStore (token_store.h)            users, hashed tokens, policies
//   ExperimentStore (experiment_store.h)  experiments and their trials' life
//   QueueStore (queue_store.h)            the queue and its leases
//   CurveStore (curve_store.h)            loss curves (the points table)
//   WorkerStore (worker_store.h)          workers and the scaler's jobs
// The rules below hold for every role: a role is a view of this one store,
// not a store of its own.
//
// Rows are prism.v1 messages where the wire already has the shape
// (Experiment, Trial, Worker, LossPoint). Every write is one transaction:
// when a method returns OK its effect is committed (and survives a process
// crash); when it fails nothing of it is visible.
//
// The queue's integrity rules live here as compare-and-set writes
// (QueueStore's, and CurveStore's WriteReports): a report, heartbeat,
// completion or failure names (trial, attempt, worker) and is applied only
// while that trial is leased or running under exactly that attempt and
// worker; otherwise the method returns FailedPrecondition and writes
// nothing. That is what keeps a stalled worker from double-writing. The
// lease *policy* (which trial next) is server/core/queue/'s; storage answers
// its questions and applies its decision.
//
// The curve rule (what keeps a stored curve without gaps; the worker's half
// is in worker/worker.h): a trial's stored points are always a prefix of the
// order its trainer emits them in. Points are stored once per (trial,
// split, step) and a repeat is ignored, so an attempt may redo steps; an
// attempt only ever starts at or before the end of that prefix, because a
// checkpoint is written only after every earlier point was stored and a
// worker never resumes past LastStoredSteps' complete prefix
// (TrialTask.stored_step). storage/check.h verifies the rule on a file.
//
//   std::unique_ptr<Store> store = *SqliteStore::Open("/data/prism.db");
//   absl::StatusOr<CreatedExperiment> e = store->CreateExperiment(spec);
//
// Thread-safety: every method may be called from any thread concurrently.
// Time is always passed in (now_ms): storage has no clock.
#ifndef PRISM_STORAGE_STORE_H_
#define PRISM_STORAGE_STORE_H_

#include "absl/status/status.h"
#include "storage/curve_store.h"
#include "storage/experiment_store.h"
#include "storage/queue_store.h"
#include "storage/token_store.h"
#include "storage/worker_store.h"
#include "storage/write_observer.h"

namespace prism::storage {

class Store : public TokenStore,
              public ExperimentStore,
              public QueueStore,
              public CurveStore,
              public WorkerStore {
 public:
  ~Store() override = default;

  // SetWriteObserver reports every later write's storage fault, and every
  // committed write, to `observer` (storage/write_observer.h), which must
  // outlive the store or be replaced by nullptr first.
  virtual void SetWriteObserver(WriteObserver* observer) = 0;
  // ProbeWrite commits a write of one row that changes nothing anyone reads
  // (it rewrites the newest schema_migrations row as it is), so a caller
  // learns whether the disk takes writes again when nothing else writes.
  // Unavailable with SQLite's message when it does not.
  virtual absl::Status ProbeWrite() = 0;
};

}  // namespace prism::storage

#endif  // PRISM_STORAGE_STORE_H_
