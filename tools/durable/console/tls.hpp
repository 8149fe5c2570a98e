// HTTPS for the console (ConsoleOptions::tls_cert, tls_key): OpenSSL, on the connections the
// console accepts itself, each bounded in time like a plain one.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <sys/types.h>

namespace durable::console::detail {

// Waits for the connection's socket to be ready for `events` (POLLIN, POLLOUT); false when the
// wait ran out.
using WaitFor = std::function<bool(short events)>;

// The server's certificate chain and key, loaded once. TLS 1.2 and 1.3, no renegotiation.
class TlsContext {
 public:
  // Throws durable::InvalidOptions naming the file and OpenSSL's reason when a file cannot be read,
  // holds no certificate or key, or the key is not the certificate's.
  TlsContext(const std::string& cert_file, const std::string& key_file);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

 private:
  friend class TlsSession;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One connection's TLS, on a non-blocking socket it does not own.
class TlsSession {
 public:
  TlsSession(const TlsContext& context, int fd);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  bool handshake(const WaitFor& wait);  // false: not a TLS client, or too slow
  // As recv/send: bytes moved, 0 at the client's close (read), -1 on an error or a wait run out.
  ssize_t read(char* to, size_t size, const WaitFor& wait);
  ssize_t write(const char* from, size_t size, const WaitFor& wait);
  void close_notify();  // tells the client the answer is whole, without waiting for its reply

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace durable::console::detail
