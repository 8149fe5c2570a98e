#include "commands.hpp"

#include <utility>

namespace durable::cli {

void Cli::verb(CLI::App* sub, std::function<void()> body) {
  sub->callback([this, body = std::move(body)] {
    try {
      body();
    } catch (...) {
      exit_code = exit_code_of(std::current_exception());
    }
  });
}

void example(CLI::App* sub, const std::string& text) {
  sub->footer("Example:\n  " + text +
              "\n\nEvery verb also takes --database-url, --schema, --actor, --json and --codec-plugin (see durable "
              "--help).");
}

}  // namespace durable::cli
