// Fencing tokens that stay unique across a PostgreSQL crash.
//
// Claims commit asynchronously (they only take leases), so a token drawn from a sequence in a
// claim can be handed out again after `pg_ctl stop -m immediate`: the sequence's advance is in
// WAL that was never flushed, while the worker that got the token goes on running the body.
// Measured on PostgreSQL 15 here: 8 clients drawing nextval in asynchronous commits, stopped
// immediately, handed out up to 65 values again after the restart. So an engine reserves a block
// of tokens at a time in a transaction that commits synchronously, and hands them out from
// memory: a token is used only after its block is durable, and no block is given out twice.
#pragma once

#include <cstdint>
#include <mutex>

namespace durable::pg {

class ConnectionPool;

class LeaseTokens {
 public:
  explicit LeaseTokens(ConnectionPool& pool) : pool_(pool) {}
  // The first of `count` consecutive tokens that were never handed out before, by any engine.
  std::int64_t take(int count);

 private:
  static constexpr std::int64_t block_size_ = std::int64_t{1} << 20;  // one synchronous commit per block
  ConnectionPool& pool_;
  std::mutex mutex_;
  std::int64_t next_ = 0;
  std::int64_t end_ = 0;  // [next_, end_) is reserved and unused
};

}  // namespace durable::pg
