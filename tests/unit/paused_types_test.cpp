// The engine's copy of the paused types (src/base/paused_types.hpp).
#include <catch2/catch.hpp>

#include "base/paused_types.hpp"

using durable::detail::PausedTypes;

TEST_CASE("the paused types' copy leaves the paused names out of the claims' names", "[unit][paused_types]") {
  PausedTypes paused;
  paused.serve({"checkout", "refund"}, {"charge", "email"});
  CHECK(*paused.workflow_names_json() == R"(["checkout","refund"])");
  CHECK(paused.set({"refund"}, {"charge", "unregistered"}, paused.own_changes()) == std::optional<bool>(true));
  CHECK(*paused.workflow_names_json() == R"(["checkout"])");
  CHECK(*paused.activity_names_json() == R"(["email"])");
  CHECK(paused.workflow_paused("refund"));
  CHECK_FALSE(paused.workflow_paused("checkout"));
  CHECK(paused.activity_paused("unregistered"));  // any name may be paused
  CHECK(paused.set({"refund"}, {"charge", "unregistered"}, paused.own_changes()) == std::optional<bool>(false));
  CHECK(paused.set({}, {}, paused.own_changes()) == std::optional<bool>(true));
  CHECK(*paused.activity_names_json() == R"(["charge","email"])");
}

TEST_CASE("a read begun before this engine's own pause does not undo it", "[unit][paused_types]") {
  PausedTypes paused;
  paused.serve({"checkout"}, {"charge"});
  const auto before = paused.own_changes();           // a re-read's query begins: nothing paused yet
  paused.set_workflow("checkout", true);              // this engine pauses meanwhile
  CHECK(paused.set({}, {}, before) == std::nullopt);  // the read is older than the pause: ignored
  CHECK(paused.workflow_paused("checkout"));
  CHECK(*paused.workflow_names_json() == "[]");
  paused.set_workflow("checkout", false);
  CHECK_FALSE(paused.workflow_paused("checkout"));
}
