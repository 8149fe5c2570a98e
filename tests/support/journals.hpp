// Hand-written journals for the unit tests of replays: events by their kind's name, and a registry
// of the two test activities most replays call.
#pragma once

#include <string>
#include <utility>

#include "base/registry.hpp"
#include "pg/records.hpp"
#include "support/test_workflows.hpp"

namespace durable::test {

// The activities "echo" and "add".
inline detail::Registry echo_and_add() {
  detail::Registry r;
  r.activities.emplace("echo", detail::make_activity<std::string>("echo", {}, EchoActivity{}));
  r.activities.emplace("add", detail::make_activity<Pair>("add", {}, AddActivity{}));
  return r;
}

// Journal event `seq` of kind `kind` ("activity_scheduled", ...); no data is an empty object.
inline pg::JournalEvent event(int seq, const std::string& kind, int step, const std::string& name, Json data = {}) {
  return {seq, journal::event_kind_from_text(kind), step, name, data.is_null() ? Json::object() : std::move(data)};
}

}  // namespace durable::test
