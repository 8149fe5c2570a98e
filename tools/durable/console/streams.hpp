// The streams the console's router reads requests from and writes answers to: a connection's
// socket, bounded in time and bytes, and bytes in memory (Console::answer).
#pragma once

#include <httplib.h>  // cpp-httplib (Debian: libcpp-httplib-dev)

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "console.hpp"
#include "tls.hpp"

namespace durable::console::detail {

// A request given as bytes, and the answer collected (Console::answer).
class MemoryStream final : public httplib::Stream {
 public:
  explicit MemoryStream(std::string_view in) : in_(in) {}
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override { get_remote_ip_and_port(ip, port); }
  socket_t socket() const override { return INVALID_SOCKET; }
  std::string out;

 private:
  std::string_view in_;
};

// The request line read ahead of httplib, which trims spaces and tabs around its words (to it,
// " HEAD / HTTP/1.1" is a HEAD, answered without a body). The console holds the line to RFC 9112's
// form first; then httplib reads it, unchanged, and the rest of `inner`.
class RequestLineStream final : public httplib::Stream {
 public:
  explicit RequestLineStream(httplib::Stream& inner);
  // False when the line ends in CRLF but is not METHOD SP target SP version (single spaces, no
  // tabs). A line httplib refuses before reading a method (no CRLF, too long, none) passes.
  bool well_formed() const noexcept { return well_formed_; }
  bool is_readable() const override { return inner_.is_readable(); }
  bool is_writable() const override { return inner_.is_writable(); }
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override { return inner_.write(ptr, size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { inner_.get_remote_ip_and_port(ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { inner_.get_local_ip_and_port(ip, port); }
  socket_t socket() const override { return inner_.socket(); }

 private:
  httplib::Stream& inner_;
  std::string line_;
  std::size_t next_ = 0;
  bool well_formed_ = true;
};

// A connection's socket, read through a buffer with a timeout per wait, a deadline for the whole
// request and a cap on the bytes read; written with a timeout per wait.
class SocketStream final : public httplib::Stream {
 public:
  using Clock = std::chrono::steady_clock;

  // With `tls`, the connection's bytes go through it (a non-blocking socket): handshake() first.
  SocketStream(int fd, const ConsoleOptions& options, TlsSession* tls = nullptr);
  // TLS's handshake, within the request's deadline; true without TLS.
  bool handshake();
  bool is_readable() const override { return true; }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override;
  // The answer too must be taken within request_deadline of its first byte: a client reading a
  // byte at a time holds its thread no longer.
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  // httplib refuses (500) a socket past select()'s FD_SETSIZE; this stream polls, so it has no such limit.
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  bool wait(short events, std::chrono::milliseconds limit) const;
  // A wait within read_timeout and the request's deadline; within write_timeout and the answer's.
  bool wait_for_request(short events) const;
  bool wait_for_answer(short events) const;
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const;

  int fd_;
  TlsSession* tls_;
  std::chrono::milliseconds read_timeout_, write_timeout_, request_deadline_;
  Clock::time_point deadline_;
  std::optional<Clock::time_point> answer_deadline_;
  std::size_t budget_;
  char buffer_[4096];
  std::size_t next_ = 0, end_ = 0;
};

}  // namespace durable::console::detail
