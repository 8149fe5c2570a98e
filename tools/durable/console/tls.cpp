#include "tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>

#include <durable/errors.hpp>

namespace durable::console::detail {

namespace {

std::string openssl_reason() {
  std::string reason;
  for (unsigned long e = ERR_get_error(); e != 0; e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    reason += (reason.empty() ? "" : "; ") + std::string(text);
  }
  return reason.empty() ? "no reason given" : reason;
}

// Runs one OpenSSL call until it is done, waiting for the socket as it asks; its result, or -1.
template <typename Call>
int until_done(SSL* ssl, const WaitFor& wait, Call call) {
  for (;;) {
    ERR_clear_error();
    const int result = call();
    if (result > 0) return result;
    switch (SSL_get_error(ssl, result)) {
      case SSL_ERROR_WANT_READ:
        if (!wait(POLLIN)) return -1;
        break;
      case SSL_ERROR_WANT_WRITE:
        if (!wait(POLLOUT)) return -1;
        break;
      case SSL_ERROR_ZERO_RETURN: return 0;
      default: return -1;
    }
  }
}

}  // namespace

struct TlsContext::Impl {
  SSL_CTX* ctx = nullptr;
  ~Impl() { SSL_CTX_free(ctx); }
};

TlsContext::TlsContext(const std::string& cert_file, const std::string& key_file) : impl_(std::make_unique<Impl>()) {
  if (cert_file.empty() != key_file.empty()) {
    throw InvalidOptions("the console's HTTPS needs both a certificate (--tls-cert) and its key (--tls-key)");
  }
  impl_->ctx = SSL_CTX_new(TLS_server_method());
  if (impl_->ctx == nullptr) throw InvalidOptions("the console cannot make a TLS context: " + openssl_reason());
  SSL_CTX_set_min_proto_version(impl_->ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(impl_->ctx, SSL_OP_NO_RENEGOTIATION);
  // httplib may hand the rest of a write over from another address.
  SSL_CTX_set_mode(impl_->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // A record without data (a key update, say) returns to our loop, which checks the deadline:
  // a client sending only those cannot keep a read going inside OpenSSL.
  SSL_CTX_clear_mode(impl_->ctx, SSL_MODE_AUTO_RETRY);
  // An encrypted key is refused, never asked for on the terminal.
  SSL_CTX_set_default_passwd_cb(impl_->ctx, [](char*, int, int, void*) { return 0; });
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(impl_->ctx, cert_file.c_str()) != 1) {
    throw InvalidOptions(
        "--tls-cert '" + cert_file +
        "': no certificate chain could be read from it (PEM, the server's first): " + openssl_reason());
  }
  const bool key_read = SSL_CTX_use_PrivateKey_file(impl_->ctx, key_file.c_str(), SSL_FILETYPE_PEM) == 1;
  if (!key_read && ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
    throw InvalidOptions("--tls-key '" + key_file +
                         "': no private key could be read from it (PEM, unencrypted): " + openssl_reason());
  }
  if (!key_read || SSL_CTX_check_private_key(impl_->ctx) != 1) {
    throw InvalidOptions("--tls-key '" + key_file + "' is not the key of the certificate in --tls-cert '" + cert_file +
                         "': " + openssl_reason());
  }
}

TlsContext::~TlsContext() = default;

struct TlsSession::Impl {
  SSL* ssl = nullptr;
  ~Impl() { SSL_free(ssl); }
};

TlsSession::TlsSession(const TlsContext& context, int fd) : impl_(std::make_unique<Impl>()) {
  impl_->ssl = SSL_new(context.impl_->ctx);
  if (impl_->ssl != nullptr) SSL_set_fd(impl_->ssl, fd);
}

TlsSession::~TlsSession() = default;

bool TlsSession::handshake(const WaitFor& wait) {
  return impl_->ssl != nullptr && until_done(impl_->ssl, wait, [&] { return SSL_accept(impl_->ssl); }) > 0;
}

ssize_t TlsSession::read(char* to, size_t size, const WaitFor& wait) {
  const int n = static_cast<int>(std::min<size_t>(size, 1 << 30));
  return until_done(impl_->ssl, wait, [&] { return SSL_read(impl_->ssl, to, n); });
}

ssize_t TlsSession::write(const char* from, size_t size, const WaitFor& wait) {
  const int n = static_cast<int>(std::min<size_t>(size, 1 << 30));
  return until_done(impl_->ssl, wait, [&] { return SSL_write(impl_->ssl, from, n); });
}

void TlsSession::close_notify() {
  ERR_clear_error();
  (void)SSL_shutdown(impl_->ssl);
}

}  // namespace durable::console::detail
