// Behind PgBouncer: an engine whose connections go through a PgBouncer in transaction mode, as
// many production services reach PostgreSQL. With EngineOptions::pooler_mode it keeps nothing on
// a session (each transaction may run on another server connection), and it LISTENs for
// wake-ups on one session of its own straight to PostgreSQL (listen_url).
//
// Run: build/examples/16-pgbouncer   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set;
// the PgBouncer is the test kit's, Debian's pgbouncer on 127.0.0.1)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <random>

struct Reserve {  // an activity: reserves stock for an order
  static constexpr auto name = "reserve_stock";
  int operator()(durable::ActivityContext&, const int& quantity) const { return quantity; }
};

struct Order {  // a workflow of three steps, each a transaction through the pooler
  static constexpr auto name = "pooled_order";
  int operator()(durable::WorkflowContext& ctx, const int& quantity) {
    int reserved = 0;
    for (int line = 0; line < 3; ++line) reserved += ctx.call<Reserve>(quantity);
    return reserved;
  }
};

int main() {
  const std::string direct = durable::testing::database_url();
  // In production this is your PgBouncer, with `connect_query='SET jit = off'` on the database's
  // line or `ALTER ROLE <engine role> SET jit = off` (docs/operations.md, Behind PgBouncer).
  durable::testing::TemporaryPgBouncer::Options bouncer;
  bouncer.connect_query = "SET jit = off";
  const durable::testing::TemporaryPgBouncer pgbouncer(direct, bouncer);

  // [pooler]
  durable::EngineOptions options;
  options.database_url = pgbouncer.url();  // every statement goes through the pooler
  options.schema = "durable_example_pgbouncer";
  options.pooler_mode = true;   // no session state: statements unprepared, no SET, no LISTEN through it
  options.listen_url = direct;  // one session straight to PostgreSQL, for LISTEN (empty: poll instead)
  // [pooler]
  durable::Engine engine(options);
  engine.add<Reserve>().add<Order>();
  engine.start();
  auto run = engine.start_workflow<Order>(fmt::format("order-{}", std::random_device{}()), 2);
  fmt::print("reserved {} items through PgBouncer\n", run.result());

  // The same URL without pooler_mode is refused before anything is written.
  options.pooler_mode = false;
  options.listen_url.clear();
  durable::Engine unaware(options);
  try {
    unaware.start();
  } catch (const durable::InvalidOptions& e) {
    fmt::print("without pooler_mode: {}\n", std::string(e.what()).substr(0, 70));
    return 0;
  }
  return 1;
}
