#include "storage/internal/reader_pool.h"

#include <utility>

#include "base/status_macros.h"

namespace prism::storage::internal {

ReaderPool::Reader::~Reader() {
  if (conn_ != nullptr) pool_->Release(std::move(conn_));
}

absl::StatusOr<ReaderPool::Reader> ReaderPool::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      return Reader(this, std::move(conn));
    }
  }
  Connection::Options options;
  options.read_only = true;
  PRISM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                         Connection::Open(path_, options));
  return Reader(this, std::move(conn));
}

void ReaderPool::Release(std::unique_ptr<Connection> conn) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(conn));
}

}  // namespace prism::storage::internal
