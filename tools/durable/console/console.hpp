// The web console: a small HTTP server showing one engine's runs, their histories, the schedules
// and the named queues, with operator actions (cancel, resume, fork, terminate; pause and resume a
// queue). Uses only the public management API (Engine::runs(), Engine::schedules(),
// Engine::queues()); see docs/console.md.
#pragma once

#include <chrono>
#include <cstddef>
#include <durable/engine.hpp>
#include <memory>
#include <string>
#include <string_view>

namespace durable::console {

struct ConsoleOptions {
  std::string listen = "127.0.0.1:8233";  // host:port ("[::1]:8233" for IPv6); port 0 picks a free one
  bool read_only = false;                 // actions are refused (403)
  // Needed for every action, and for reads too when listening on a non-loopback address.
  // Empty: a random one is made (token()); required when listening on a non-loopback address.
  std::string token{};
  std::string actor = "console";  // recorded in the audit trail with each action
  // Where browsers reach the console through a TLS-terminating proxy, scheme://host[:port] as the
  // browser's Origin header spells it ("https://ops.example.com"). Actions from that origin are
  // accepted, and on loopback a Host header naming it too. Empty: only the console's own address.
  std::string public_origin{};
  std::size_t max_body_bytes = std::size_t{64} * 1024;  // a larger request body gets 413, however it is sent
  std::size_t max_connections = 64;                     // more at once are answered 503 and closed
  std::chrono::milliseconds read_timeout = std::chrono::seconds{5};   // longest silence within a request
  std::chrono::milliseconds write_timeout = std::chrono::seconds{5};  // longest wait for the client to read
  // A request must have arrived in full (line, headers, body) this soon after its connection
  // opened, or the connection is closed: a client trickling bytes holds no thread for longer.
  std::chrono::milliseconds request_deadline = std::chrono::seconds{10};
  // HTTPS: files of the server's certificate chain (PEM, its own first) and of its private key
  // (PEM, unencrypted). Both or neither; neither: plain HTTP (on loopback, or behind a proxy
  // that ends TLS). TLS 1.2 and 1.3; the handshake falls within request_deadline.
  std::string tls_cert{};
  std::string tls_key{};
};

// Serves the console for one engine's schema until stop(). The engine need not be started.
class Console {
 public:
  // Throws durable::InvalidOptions on a malformed listen address or public origin, a non-loopback
  // address without a token, a limit of 0, or a TLS certificate or key that cannot be used.
  Console(durable::Engine& engine, ConsoleOptions options);
  ~Console();  // stop()
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // Binds and serves on threads of its own; returns once listening. Throws durable::Error when
  // the address cannot be bound (in use, not local).
  void start();
  int port() const;  // the port bound; 0 before start()
  const std::string& token() const;
  // Stops serving and joins the server's threads; requests being answered finish first, those
  // still arriving are cut off.
  void stop();

  // Answers one HTTP request given as the bytes a client would send, through the same parser,
  // checks and routes as a connection, without a socket (tests and the fuzzer use it). Returns
  // the response's bytes; empty when `request` holds no request line.
  std::string answer(std::string_view request);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace durable::console
