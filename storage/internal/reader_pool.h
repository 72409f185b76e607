// ReaderPool: read-only connections to one SQLite file, one per concurrent
// reader thread. Acquire checks a connection out (opening a new one when none
// is idle) and the returned Reader puts it back when it dies, so a pool grows
// to the peak number of concurrent readers and no further. In WAL mode each
// connection sees the latest commit without blocking the writer.
//
//   PRISM_ASSIGN_OR_RETURN(ReaderPool::Reader r, pool.Acquire());
//   PRISM_ASSIGN_OR_RETURN(Query q, r->Prepare("SELECT ..."));
//
// Thread-safety: Acquire may be called from any thread; a Reader belongs to
// the thread that acquired it. Every Reader must die before its pool.
#ifndef PRISM_STORAGE_INTERNAL_READER_POOL_H_
#define PRISM_STORAGE_INTERNAL_READER_POOL_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/internal/sqlite.h"

namespace prism::storage::internal {

class ReaderPool {
 public:
  // Reader is a checked-out connection, returned to its pool on destruction.
  class Reader {
   public:
    Reader(Reader&&) = default;
    Reader& operator=(Reader&&) = delete;
    ~Reader();
    Connection* operator->() { return conn_.get(); }
    Connection* get() { return conn_.get(); }

   private:
    friend class ReaderPool;
    Reader(ReaderPool* pool, std::unique_ptr<Connection> conn)
        : pool_(pool), conn_(std::move(conn)) {}
    ReaderPool* pool_;
    std::unique_ptr<Connection> conn_;
  };

  // ReaderPool opens connections to the database at `path` on demand.
  explicit ReaderPool(std::string path) : path_(std::move(path)) {}
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  // Acquire returns an idle connection or a newly opened one; Unavailable
  // when a new one cannot be opened.
  absl::StatusOr<Reader> Acquire();

 private:
  void Release(std::unique_ptr<Connection> conn);

  const std::string path_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace prism::storage::internal

#endif  // PRISM_STORAGE_INTERNAL_READER_POOL_H_
