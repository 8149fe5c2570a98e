// Failover: an engine on a primary and its standby. Its URL names both hosts with
// target_session_attrs=read-write, so libpq connects to whichever takes writes. The primary stops
// hard mid-run, the standby is promoted, and the engine goes on there: the run in flight
// completes, and what was committed before is still there (replication is synchronous: a commit
// is on both servers before it is acknowledged).
//
// Run: build/examples/17-failover   (two throwaway PostgreSQL clusters from the test kit; in
// production the hosts are your primary and standbys, and promotion is your failover manager's)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <regex>

struct Charge {  // an activity: charges a card
  static constexpr auto name = "charge_card";
  int operator()(durable::ActivityContext&, const int& cents) const { return cents; }
};

struct Checkout {  // charges, waits two seconds (a durable timer), charges again
  static constexpr auto name = "checkout";
  int operator()(durable::WorkflowContext& ctx, const int& cents) {
    int charged = ctx.call<Charge>(cents);
    ctx.sleep(std::chrono::seconds{2});
    return charged + ctx.call<Charge>(cents);
  }
};

// The socket folder of a test kit cluster's URL ("host=/tmp/durable-pg-... port=5432 ...").
std::string host_of(const std::string& url) {
  std::smatch m;
  std::regex_search(url, m, std::regex(R"(host=(\S+))"));
  return m[1].str();
}

int main() {
  using durable::testing::TemporaryPostgres;
  TemporaryPostgres primary({.synchronous_standby_names = "*"});  // commits wait for the standby
  TemporaryPostgres standby({.standby_of = &primary});

  // [failover]
  durable::EngineOptions options;
  // Both hosts; libpq tries them in turn and keeps the one that takes writes.
  options.database_url = fmt::format(
      "host={},{} port=5432,5432 dbname=postgres user=durable "
      "target_session_attrs=read-write",
      host_of(primary.url()), host_of(standby.url()));
  options.database_unavailable_after = std::chrono::minutes{2};  // longer than your failovers take (default 60 s)
  // [failover]
  options.schema = "durable_example_failover";
  durable::Engine engine(options);
  engine.add<Charge>().add<Checkout>();
  engine.start();
  const int before = engine.start_workflow<Checkout>("checkout-1", 500).result();  // committed on both
  auto run = engine.start_workflow<Checkout>("checkout-2", 1250);

  primary.stop(TemporaryPostgres::StopMode::immediate);  // as a crash: no checkpoint, clients cut off
  standby.promote();
  fmt::print("charged {} cents; the run went on on the promoted standby\n", run.result(std::chrono::seconds{60}));
  // What was committed before the crash is there too.
  const bool kept = engine.workflow<Checkout>("checkout-1").result(std::chrono::seconds{5}) == before;
  fmt::print("the run before the crash: {}\n", kept ? "its result kept" : "LOST");
  return kept ? 0 : 1;
}
