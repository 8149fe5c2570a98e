// `durable console`: serves the web console (console/console.hpp) until Ctrl-C or SIGTERM.
#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <thread>

#include "commands.hpp"
#include "console/console.hpp"

namespace durable::cli {
namespace {

std::atomic<bool> stop_console{false};

// The console's secret: from --token-file or DURABLE_CONSOLE_TOKEN (any user can read another's
// argv in ps), or from --token; empty when none is given, and the console makes one.
std::string console_token(const std::string& token, const std::string& token_file) {
  const char* env = std::getenv("DURABLE_CONSOLE_TOKEN");
  const bool from_env = env != nullptr && *env != '\0';
  if (!token.empty() + !token_file.empty() + from_env > 1) {
    throw InvalidArgument("give the console's token one way: --token-file, DURABLE_CONSOLE_TOKEN or --token");
  }
  if (from_env) return env;
  if (token_file.empty()) return token;
  std::ifstream in(token_file);
  std::string secret;
  if (!in || !std::getline(in, secret)) throw InvalidArgument("--token-file '" + token_file + "': cannot read a line");
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.pop_back();
  if (secret.empty()) throw InvalidArgument("--token-file '" + token_file + "': its first line is empty");
  return secret;
}

void serve_console(Tool& tool, console::ConsoleOptions options, const std::string& token_file) {
  options.token = console_token(options.token, token_file);
  const bool given = !options.token.empty();
  console::Console c(tool.engine(), options);
  tool.runs().count_by_status();  // the database is there and at this build's version, before serving
  c.start();
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  // A token made here is printed once, for the operator to open the page with; a given one never.
  std::cout << fmt::format("durable console on {}://{}:{}/{}{}\n(Ctrl-C stops it)\n",
                           options.tls_cert.empty() ? "http" : "https", host, c.port(),
                           given ? "" : "#token=" + c.token(), options.read_only ? " (read-only)" : "")
            << std::flush;
  std::signal(SIGINT, [](int) { stop_console = true; });
  std::signal(SIGTERM, [](int) { stop_console = true; });
  while (!stop_console) std::this_thread::sleep_for(std::chrono::milliseconds{100});
  c.stop();
}

}  // namespace

void add_console_command(CLI::App& app, Cli& cli) {
  struct ConsoleArgs {
    console::ConsoleOptions options;
    std::string token_file;
  };
  auto a = std::make_shared<ConsoleArgs>();
  console::ConsoleOptions& con_options = a->options;
  auto* con = app.add_subcommand("console", "serve the web console");
  con->add_option("--listen", con_options.listen, "host:port (a non-loopback host needs a token)")
      ->capture_default_str();
  con->add_flag("--read-only", con_options.read_only, "refuse every action");
  con->add_option("--token-file", a->token_file,
                  "a file whose first line is the secret actions (and non-loopback reads) need; or set "
                  "DURABLE_CONSOLE_TOKEN (default: a random one, printed)");
  con->add_option("--token", con_options.token,
                  "the secret itself (other users can read it in ps: prefer --token-file)");
  con->add_option("--public-origin", con_options.public_origin,
                  "scheme://host[:port] browsers reach the console at through a TLS proxy (its actions are accepted)");
  con->add_option("--max-connections", con_options.max_connections, "connections served at once; more get 503")
      ->capture_default_str();
  con->add_option("--tls-cert", con_options.tls_cert,
                  "serve HTTPS with this certificate chain (PEM file, the server's first); needs --tls-key");
  con->add_option("--tls-key", con_options.tls_key, "the certificate's private key (PEM file, unencrypted)");
  example(con, "durable console --listen 127.0.0.1:8233 --read-only");
  cli.verb(con, [&cli, a] {
    a->options.actor = cli.globals.actor;
    serve_console(cli.tool, a->options, a->token_file);
  });
}

}  // namespace durable::cli
