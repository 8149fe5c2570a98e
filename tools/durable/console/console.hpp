// The web console: a small HTTP server showing one engine's runs, their histories and the
// schedules, with operator actions (cancel, resume, fork, terminate). Uses only the public
// management API (Engine::runs(), Engine::schedules()); see docs/console.md.
#pragma once

#include <durable/engine.hpp>
#include <memory>
#include <string>

namespace durable::console {

struct ConsoleOptions {
  std::string listen = "127.0.0.1:8233";  // host:port ("[::1]:8233" for IPv6); port 0 picks a free one
  bool read_only = false;                 // actions are refused (403)
  // Needed for every action, and for reads too when listening on a non-loopback address.
  // Empty: a random one is made (token()); required when listening on a non-loopback address.
  std::string token{};
  std::string actor = "console";  // recorded in the audit trail with each action
};

// Serves the console for one engine's schema until stop(). The engine need not be started.
class Console {
 public:
  // Throws durable::InvalidOptions on a malformed listen address, or a non-loopback one without a token.
  Console(durable::Engine& engine, ConsoleOptions options);
  ~Console();  // stop()
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Binds and serves on a thread of its own; returns once listening. Throws durable::Error when
  // the address cannot be bound (in use, not local).
  void start();
  int port() const;  // the port bound; 0 before start()
  const std::string& token() const;
  // Stops serving and joins the server thread; requests in flight finish first.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace durable::console
