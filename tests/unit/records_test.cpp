// The one text form of each journal event kind and status: every value round-trips, and text
// the build does not know is a clear error, not a guess.
#include <catch2/catch.hpp>

#include "pg/records.hpp"
#include "support/expect.hpp"

using namespace durable;
using namespace durable::pg;

TEST_CASE("event kinds and statuses round-trip through their one text form", "[unit][records]") {
  for (int k = 0; k <= static_cast<int>(EventKind::wait_chosen); ++k) {
    const auto kind = static_cast<EventKind>(k);
    CHECK(event_kind_from_text(to_text(kind)) == kind);
  }
  for (int k = 0; k <= static_cast<int>(RunStatus::cancelled); ++k) {
    const auto status = static_cast<RunStatus>(k);
    CHECK(run_status_from_text(to_text(status)) == status);
  }
  for (int k = 0; k <= static_cast<int>(TaskStatus::cancelled); ++k) {
    const auto status = static_cast<TaskStatus>(k);
    CHECK(task_status_from_text(to_text(status)) == status);
  }
  CHECK(to_text(EventKind::activity_completed) == "activity_completed");  // what the tables hold
  CHECK(to_text(TaskStatus::pending) == "pending");
}

TEST_CASE("a kind or status the build does not know is refused by name", "[unit][records]") {
  test::expect_throw<Error>([] { event_kind_from_text("workflow_teleported"); }, "unknown journal event kind",
                            "'workflow_teleported'", "newer version of durable");
  test::expect_throw<Error>([] { run_status_from_text("paused"); }, "unknown run status 'paused'");
  test::expect_throw<Error>([] { task_status_from_text(""); }, "unknown task status ''");
}

TEST_CASE("task options keep only what differs from the defaults, and read back whole", "[unit][records]") {
  detail::ResolvedActivityOptions defaults;
  const Json small = pg::options_to_json(defaults);
  CHECK(small == Json::object());  // the statements fall back to the same pinned durations
  // The pinned values are today's defaults; if a default changes, the pins must not.
  CHECK(defaults.timeout.count() == pg::stored_default_timeout_ms);
  CHECK(defaults.retry.max_retry_horizon.count() == pg::stored_default_retry_horizon_ms);
  CHECK(defaults.retry.max_attempts == pg::stored_default_max_attempts);
  CHECK(defaults.retry.base.count() == pg::stored_default_base_ms);
  CHECK(defaults.retry.max_backoff.count() == pg::stored_default_max_backoff_ms);
  CHECK(defaults.retry.jitter == pg::stored_default_jitter);
  const auto read_back = pg::options_from_json(small);
  CHECK(read_back.timeout == defaults.timeout);
  CHECK(read_back.retry.max_retry_horizon == defaults.retry.max_retry_horizon);
  // Rows of version 9 kept the two durations always:
  CHECK(pg::options_from_json(Json{{"timeout_ms", 7000}, {"max_retry_horizon_ms", 1000}}).timeout == Duration{7000});
  detail::ResolvedActivityOptions o;
  o.retry.max_attempts = 5;
  o.retry.backoff = Backoff::exponential;
  o.retry.base = Duration{250};
  o.retry.max_backoff = Duration{9000};
  o.retry.jitter = 0.5;
  o.retry.non_retryable_errors = {"std::invalid_argument"};
  o.timeout = Duration{1234};
  o.idempotency_key = std::string("k\0y", 3);
  const auto back = pg::options_from_json(pg::options_to_json(o));
  CHECK(back.retry.max_attempts == 5);
  CHECK(back.retry.backoff == Backoff::exponential);
  CHECK(back.retry.base == Duration{250});
  CHECK(back.retry.max_backoff == Duration{9000});
  CHECK(back.retry.jitter == 0.5);
  CHECK(back.retry.non_retryable_errors == std::vector<std::string>{"std::invalid_argument"});
  CHECK(back.timeout == Duration{1234});
  CHECK(back.idempotency_key == o.idempotency_key);
  // As versions before 9 wrote every field:
  const auto old = pg::options_from_json(Json::parse(
      R"({"jitter": 0.0, "backoff": "constant", "base_ms": 0, "timeout_ms": 2000, "max_attempts": 3,
          "max_backoff_ms": 60000, "idempotency_key_hex": null, "max_retry_horizon_ms": 86400000,
          "non_retryable_errors": []})"));
  CHECK(old.retry.max_attempts == 3);
  CHECK(old.timeout == Duration{2000});
  CHECK_FALSE(old.idempotency_key.has_value());
}
