// libFuzzer target: history import (durable::testing::replay over an exported history, as a user
// hands one in from a file). A malformed history is InvalidHistory; a history of a workflow the
// engine does not register is UnknownWorkflow, and one with values encoded under a key the
// engine's codec (none here) does not read is CodecError. Any other exception escaping, or a
// sanitizer report, is a finding. The replay runs the registered workflows' code on the journal,
// so what the journal reader and the replay accept is fuzzed too. No database is contacted.
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const durable::Json history = durable::Json::parse(text, nullptr, false);
  if (history.is_discarded()) return 0;  // not JSON: replay_file's own check (tested)
  try {
    (void)durable::testing::replay(history, engine());
  } catch (const durable::InvalidHistory&) {
  } catch (const durable::UnknownWorkflow&) {
  } catch (const durable::CodecError&) {
  }
  return 0;
}
