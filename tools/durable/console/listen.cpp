#include "listen.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <durable/errors.hpp>
#include <regex>

#include "console_text.hpp"

namespace durable::console::detail {
namespace {

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  return false;  // any other name may resolve to anything
}

}  // namespace

Listen parse_listen(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return InvalidOptions("console listen address '" + text + "': " + why +
                          " (host:port, e.g. 127.0.0.1:8233 or [::1]:8233; port 0 picks a free one)");
  };
  Listen listen;
  std::string port;
  if (!text.empty() && text.front() == '[') {  // [IPv6]:port
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') throw bad("no ]:port");
    listen.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("no port");
    if (text.find(':') != colon) throw bad("an IPv6 address goes in brackets");
    listen.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (listen.host.empty()) throw bad("no host");
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    throw bad("the port must be a number");
  }
  listen.port = std::stoi(port);
  if (listen.port > 65535) throw bad("the port must be at most 65535");
  listen.loopback = is_loopback(listen.host);
  return listen;
}

std::string public_authority(const std::string& origin) {
  static const std::regex form(R"(https?://([a-z0-9.-]+|\[[0-9a-f:.]+\])(:([0-9]{1,5}))?)");
  std::smatch m;
  if (!std::regex_match(origin, m, form) || (m[3].matched && std::stoi(m[3]) > 65535)) {
    throw InvalidOptions("console public origin '" + one_line(origin) +
                         "': give scheme://host[:port] as the browser's address bar shows it, in lower case and "
                         "without a path (e.g. https://ops.example.com)");
  }
  return origin.substr(origin.find("://") + 3);
}

int bind_listener(const Listen& listen) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(listen.host.c_str(), std::to_string(listen.port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    // Non-blocking: a connection reset between poll() and accept() must not block the acceptor.
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return port_of(addr);
}

int port_of(const sockaddr_storage& addr) {
  return addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port)
                                    : ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

}  // namespace durable::console::detail
