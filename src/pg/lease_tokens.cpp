#include "pg/lease_tokens.hpp"

#include <algorithm>

#include "pg/connection_pool.hpp"
#include "pg/statements.hpp"

namespace durable::pg {

std::int64_t LeaseTokens::take(int count) {
  const std::int64_t wanted = std::max(count, 1);
  std::lock_guard lock(mutex_);
  if (end_ - next_ < wanted) {
    const std::int64_t size = std::max(block_size_, wanted);
    pool_.write("reserve_lease_tokens", [&](pqxx::connection& conn, bool) {
      pqxx::work tx(conn);
      // Whatever the role or session says: the block must be durable before a token of it is used.
      tx.exec0("SET LOCAL synchronous_commit = on");
      next_ = exec1(tx, stmt::reserve_lease_tokens, size)["first"].as<std::int64_t>();
      tx.commit();  // a lost answer: the retry reserves another block, this one is never used
    });
    end_ = next_ + size;
  }
  const std::int64_t first = next_;
  next_ += wanted;
  return first;
}

}  // namespace durable::pg
