// The one text form of each journal event kind and status: every value round-trips, and text
// the build does not know is a clear error, not a guess.
#include <catch2/catch.hpp>

#include "pg/records.hpp"
#include "support/expect.hpp"

using namespace durable;
using namespace durable::pg;

TEST_CASE("event kinds and statuses round-trip through their one text form", "[unit][records]") {
  for (int k = 0; k <= static_cast<int>(EventKind::workflow_cancelled); ++k) {
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
  test::expect_throw<Error>([] { event_kind_from_text("message_received"); }, "unknown journal event kind",
                            "'message_received'", "newer version of durable");
  test::expect_throw<Error>([] { run_status_from_text("paused"); }, "unknown run status 'paused'");
  test::expect_throw<Error>([] { task_status_from_text(""); }, "unknown task status ''");
}
