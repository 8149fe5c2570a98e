// libFuzzer target: history import (durable::testing::replay over an exported history, as a user
// hands one in from a file). A malformed history is InvalidHistory; a history of a workflow the
// engine does not register is UnknownWorkflow, and one with values encoded under a key the
// engine's codec (none here) does not read is CodecError. Any other exception escaping, or a
// sanitizer report, is a finding. The replay runs the registered workflows' code on the journal,
// so what the journal reader and the replay accept is fuzzed too. No database is contacted.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "durable/durable.hpp"
#include "durable/testing.hpp"
#include "support/test_workflows.hpp"

namespace {

durable::Engine& engine() {
  static durable::Engine* e = [] {
    durable::EngineOptions o;
    o.database_url = "postgresql://fuzz@127.0.0.1:1/fuzz";  // parsed, never connected to
    auto* made = new durable::Engine(o);
    durable::test::register_all(*made);
    return made;
  }();
  return *e;
}

// Whether `json` holds a float beyond what a 32-bit int holds. The test workflows, like a user's,
// decode their payloads into their own types with nlohmann_json, whose float-to-integer cast is
// unchecked (undefined behaviour out of range; docs/configuration.md says so): that is the user
// type's conversion, not the engine's, so such payloads are left out. The engine's own fields
// (times, steps, attempts) are checked by the journal reader and stay fuzzed.
bool holds_huge_float(const durable::Json& json) {
  if (json.is_number_float()) return !(std::abs(json.get<double>()) < 2147483648.0);
  if (!json.is_structured()) return false;
  for (const auto& item : json) {
    if (holds_huge_float(item)) return true;
  }
  return false;
}

bool decodes_huge_float(const durable::Json& history) {
  if (!history.is_object() || !history.contains("events") || !history["events"].is_array()) return false;
  for (const auto& event : history["events"]) {
    if (!event.is_object() || !event.contains("data") || !event["data"].is_object()) continue;
    for (const auto* payload : {"input", "result", "payload", "value"}) {
      if (event["data"].contains(payload) && holds_huge_float(event["data"][payload])) return true;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const durable::Json history = durable::Json::parse(text, nullptr, false);
  if (history.is_discarded()) return 0;  // not JSON: replay_file's own check (tested)
  if (decodes_huge_float(history)) return 0;
  try {
    (void)durable::testing::replay(history, engine());
  } catch (const durable::InvalidHistory&) {
  } catch (const durable::UnknownWorkflow&) {
  } catch (const durable::CodecError&) {
  }
  return 0;
}
