// Samples a count every couple of milliseconds on a connection of its own, and keeps the most it
// ever saw: the flow-control tests' proof that a limit was never exceeded, even for an instant.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "support/test_db.hpp"

namespace durable::test {

// `sql` returns rows of (a concurrency key, a count): the most of their sum is kept, and the most
// of one key's count, keys "" left out.
class MostSampler {
 public:
  MostSampler(const TestDb& db, std::string sql) : db_(db), sql_(std::move(sql)) {
    thread_ = std::thread([this] { sample(); });
  }
  ~MostSampler() { stop(); }
  MostSampler(const MostSampler&) = delete;
  MostSampler& operator=(const MostSampler&) = delete;
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  long long most_in_total() const { return most_total_.load(); }
  long long most_per_key() const { return most_key_.load(); }
  long long samples() const { return samples_.load(); }

 private:
  void sample() {
    pqxx::connection conn(db_.url());
    while (!stopping_) {
      pqxx::nontransaction tx(conn);
      long long total = 0;
      for (const auto& row : tx.exec(sql_)) {
        const auto n = row[1].as<long long>();
        total += n;
        if (!row[0].as<std::string>().empty()) most_key_ = std::max(most_key_.load(), n);
      }
      most_total_ = std::max(most_total_.load(), total);
      ++samples_;
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
    }
  }
  const TestDb& db_;
  const std::string sql_;
  std::atomic<bool> stopping_{false};
  std::atomic<long long> most_total_{0}, most_key_{0}, samples_{0};
  std::thread thread_;
};

// Stops the sampler and checks that it sampled enough, never saw more than the limits, and saw the
// total reach at least `used` (the limits were used, so the check could have failed).
inline void check_never_over(MostSampler& sampler, long long total, long long per_key, long long used) {
  sampler.stop();
  INFO("samples: " << sampler.samples());
  CHECK(sampler.samples() > 100);
  CHECK(sampler.most_in_total() <= total);
  CHECK(sampler.most_per_key() <= per_key);
  CHECK(sampler.most_in_total() >= used);
}

}  // namespace durable::test
