// An outside project: compiles against the installed headers and links the installed library.
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <iostream>

struct Greet {
  static constexpr auto name = "greet";
  std::string operator()(durable::ActivityContext&, const std::string& who) const { return "hello, " + who; }
};

int main() {
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
