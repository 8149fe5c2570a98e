// An outside project: compiles against the installed headers and links the installed library.
#include <durable/durable.hpp>

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
    return 0;
  }
  return 1;
}
