// Where the console listens: its listen address and public origin parsed and checked, and the
// listening socket bound.
#pragma once

#include <sys/socket.h>

#include <string>

namespace durable::console::detail {

struct Listen {
  std::string host;
  int port = 0;
  bool loopback = false;
};

// "127.0.0.1:8233", "[::1]:8233", "localhost:0". Throws InvalidOptions saying the forms it takes.
Listen parse_listen(const std::string& text);

// "https://ops.example.com[:port]" -> "ops.example.com[:port]", the Host a proxy may pass on.
// Throws InvalidOptions on anything but scheme://host[:port].
std::string public_authority(const std::string& origin);

// A listening socket on `listen`, or -1.
int bind_listener(const Listen& listen);

// The port `fd` is bound to, or -1.
int bound_port(int fd);

// The port of an IPv4 or IPv6 address.
int port_of(const sockaddr_storage& addr);

}  // namespace durable::console::detail
