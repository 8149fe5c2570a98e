#include "streams.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "listen.hpp"

namespace durable::console::detail {

ssize_t MemoryStream::read(char* ptr, size_t size) {
  const std::size_t n = std::min(size, in_.size());
  std::memcpy(ptr, in_.data(), n);
  in_.remove_prefix(n);
  return static_cast<ssize_t>(n);
}

ssize_t MemoryStream::write(const char* ptr, size_t size) {
  out.append(ptr, size);
  return static_cast<ssize_t>(size);
}

void MemoryStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = "127.0.0.1";
  port = 0;
}

RequestLineStream::RequestLineStream(httplib::Stream& inner) : inner_(inner) {
  // One byte at a time, so that nothing past the line is taken from `inner`; a line longer than
  // httplib allows is left for it to refuse (414).
  char byte = 0;
  while (line_.size() <= CPPHTTPLIB_REQUEST_URI_MAX_LENGTH + 2 && inner_.read(&byte, 1) == 1) {
    line_.push_back(byte);
    if (byte == '\n') break;
  }
  if (line_.size() < 2 || line_.compare(line_.size() - 2, 2, "\r\n") != 0) return;
  const std::string_view words(line_.data(), line_.size() - 2);
  well_formed_ = std::count(words.begin(), words.end(), ' ') == 2 && words.find('\t') == std::string_view::npos &&
                 words.front() != ' ' && words.back() != ' ' && words.find("  ") == std::string_view::npos;
}

ssize_t RequestLineStream::read(char* ptr, size_t size) {
  if (next_ == line_.size()) return inner_.read(ptr, size);
  const std::size_t n = std::min(size, line_.size() - next_);
  std::memcpy(ptr, line_.data() + next_, n);
  next_ += n;
  return static_cast<ssize_t>(n);
}

SocketStream::SocketStream(int fd, const ConsoleOptions& options, TlsSession* tls)
    : fd_(fd),
      tls_(tls),
      read_timeout_(options.read_timeout),
      write_timeout_(options.write_timeout),
      request_deadline_(options.request_deadline),
      deadline_(Clock::now() + options.request_deadline),
      // Room for the request line and headers beyond the body: httplib bounds each line, not their number.
      budget_(options.max_body_bytes + std::size_t{64} * 1024) {}

bool SocketStream::handshake() {
  return tls_ == nullptr || tls_->handshake([this](short events) { return wait_for_request(events); });
}

bool SocketStream::wait_for_request(short events) const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
  return wait(events, std::min(left, read_timeout_));
}

ssize_t SocketStream::read(char* ptr, size_t size) {
  if (next_ == end_) {
    if (budget_ == 0) return -1;
    const std::size_t most = std::min(sizeof buffer_, budget_);
    const ssize_t n = tls_ != nullptr
                          ? tls_->read(buffer_, most, [this](short events) { return wait_for_request(events); })
                          : (wait_for_request(POLLIN) ? ::recv(fd_, buffer_, most, 0) : -1);
    if (n <= 0) return n;
    budget_ -= static_cast<std::size_t>(n);
    next_ = 0;
    end_ = static_cast<std::size_t>(n);
  }
  const std::size_t n = std::min(size, end_ - next_);
  std::memcpy(ptr, buffer_ + next_, n);
  next_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t SocketStream::write(const char* ptr, size_t size) {
  if (!answer_deadline_) answer_deadline_ = Clock::now() + request_deadline_;
  if (tls_ != nullptr) return tls_->write(ptr, size, [this](short events) { return wait_for_answer(events); });
  if (!wait_for_answer(POLLOUT)) return -1;
  return ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);  // what fits now; httplib sends the rest
}

bool SocketStream::wait_for_answer(short events) const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*answer_deadline_ - Clock::now());
  return wait(events, std::min(left, write_timeout_));
}

void SocketStream::get_remote_ip_and_port(std::string& ip, int& port) const { address(::getpeername, ip, port); }

void SocketStream::get_local_ip_and_port(std::string& ip, int& port) const { address(::getsockname, ip, port); }

bool SocketStream::wait(short events, std::chrono::milliseconds limit) const {
  if (limit.count() <= 0) return false;
  pollfd p{fd_, events, 0};
  int ready;
  do {
    ready = ::poll(&p, 1, static_cast<int>(limit.count()));
  } while (ready < 0 && errno == EINTR);
  return ready == 1;
}

void SocketStream::address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char text[INET6_ADDRSTRLEN] = "";
  port = 0;
  if (get(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
      getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0) {
    port = port_of(addr);
  }
  ip = text;
}

}  // namespace durable::console::detail
