// An outside project: compiles against the installed headers and links the installed library.
#include <durable/durable.hpp>
#include <durable/pqxx.hpp>
#include <durable/testing.hpp>

#include <iostream>

struct Greet {
  static constexpr auto name = "greet";
  std::string operator()(durable::ActivityContext&, const std::string& who) const { return "hello, " + who; }
};

// A transactional activity: libpqxx reaches the consumer through durable::pqxx.
struct Deposit {
  static constexpr auto name = "deposit";
  int operator()(durable::TransactionContext& ctx, const int& cents) const {
    ctx.transaction().exec_params0("UPDATE accounts SET cents = cents + $1", cents);
    return cents;
  }
};

int main() {
  {
    durable::Engine engine({.database_url = "host=/nonexistent", .schema = "consumer"});  // never started
    engine.add<Deposit>();
    std::cout << "consumer linked durable::pqxx\n";
  }
  durable::EngineOptions options;
  options.database_url = "host=/nonexistent";
  options.schema = "Not A Valid Schema";
  try {
    durable::Engine engine(options);
  } catch (const durable::InvalidSchemaName& e) {
    std::cout << "consumer linked durable: " << e.what() << "\n";
    // ... and the test kit, a target of its own.
    std::cout << "consumer linked durable::testing: " << durable::testing::unique_schema("consumer") << "\n";
    return 0;
  }
  return 1;
}
