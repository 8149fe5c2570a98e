// The web console over HTTPS (ConsoleOptions::tls_cert, tls_key; `durable console --tls-cert
// --tls-key`): chromium trusts the test certificate's key (a pin, not a blanket ignore) and uses
// the console as over HTTP, actions included; plaintext gets no answer; a certificate or key that
// cannot be used is refused before anything listens.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <console.hpp>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "browser/webdriver.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace std::chrono_literals;
using durable::console::Console;
using durable::console::ConsoleOptions;
using durable::test::Browser;
using durable::test::RunningEngine;
using durable::test::wait_until;

namespace {

// Base64 of the SHA-256 of the certificate's public key (SubjectPublicKeyInfo, DER), as chromium's
// --ignore-certificate-errors-spki-list takes it: that key alone is trusted, for this browser.
std::string public_key_pin(const std::filesystem::path& cert) {
  const std::string command = "openssl x509 -in '" + cert.string() +
                              "' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | "
                              "openssl enc -base64 -A";
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char line[128] = "";
  const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
  REQUIRE(::pclose(pipe) == 0);
  REQUIRE(read);
  return line;
}

struct TlsFiles {
  TlsFiles()
      : dir(std::filesystem::temp_directory_path() / durable::testing::unique_schema("console_tls")),
        made(durable::testing::make_test_certificates(dir, {"localhost", "127.0.0.1"})) {}
  ~TlsFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;
  const std::filesystem::path dir;
  const durable::testing::TestCertificates made;
};

}  // namespace

TEST_CASE("the console serves HTTPS: pages, reads and an action over TLS, and plaintext gets no answer",
          "[browser][tls]") {
  const TlsFiles tls;
  RunningEngine env([](durable::EngineOptions& o) { o.instance = "browser-tls"; });
  Console console(env.engine, {.listen = "127.0.0.1:0", .tls_cert = tls.made.cert, .tls_key = tls.made.key});
  console.start();
  std::filesystem::create_directories(DURABLE_BROWSER_ARTIFACTS);
  Browser b(std::string(DURABLE_BROWSER_ARTIFACTS) + "/tls-chromedriver.log",
            {"--ignore-certificate-errors-spki-list=" + public_key_pin(tls.made.cert)});
  // Three connections that never begin a handshake hold a thread each, and no one else up.
  std::vector<int> silent;
  for (int i = 0; i < 3; ++i) {
    silent.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(console.port()));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(silent.back(), reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
  }
  const auto run = env.engine.start_workflow<durable::test::ApprovalWorkflow>("order-tls", 3'600'000);
  const std::string base = "https://localhost:" + std::to_string(console.port());
  b.go(base + "/#token=" + console.token());
  b.find("main[data-loaded='runs']");
  b.go(base + "/#/run/" + run.run_id().str());
  CHECK(b.wait_text("#run-status", "running") == "running");
  CHECK(b.url().rfind("https://", 0) == 0);
  // An action: its Origin is the https one, which the console takes as its own.
  b.click(b.find("#act-cancel"));
  b.type(b.find("#act-reason"), "ordered by mistake");
  b.click(b.find("#act-submit"));
  b.wait_text("#act-message", "Cancel done");
  CHECK(wait_until([&] { return run.status() == durable::WorkflowStatus::cancelled; }));
  for (const int fd : silent) ::close(fd);

  // Plain HTTP to the HTTPS port: closed unanswered, well within the request deadline.
  httplib::Client plain("127.0.0.1", console.port());
  plain.set_read_timeout(15);
  const auto began = std::chrono::steady_clock::now();
  CHECK_FALSE(plain.Get("/api/runs"));
  CHECK(std::chrono::steady_clock::now() - began < 12s);
}

TEST_CASE("a console certificate or key that cannot be used is refused before anything listens",
          "[browser][tls][bad_input]") {
  const TlsFiles tls;
  const TlsFiles other;
  RunningEngine env;
  const auto refused = [&](const std::string& cert, const std::string& key, const std::string& says) {
    INFO(cert << " / " << key);
    try {
      Console console(env.engine, {.listen = "127.0.0.1:0", .tls_cert = cert, .tls_key = key});
      FAIL_CHECK("the console took them");
    } catch (const durable::InvalidOptions& e) {
      CHECK_THAT(e.what(), Catch::Contains(says));
    }
  };
  refused(tls.made.cert, "", "needs both a certificate (--tls-cert) and its key (--tls-key)");
  refused("", tls.made.key, "needs both");
  refused((tls.dir / "missing.crt").string(), tls.made.key, "--tls-cert '");
  refused(tls.made.key, tls.made.key, "no certificate chain could be read");
  refused(tls.made.cert, tls.made.cert, "no private key could be read");
  refused(tls.made.cert, other.made.key, "is not the key of the certificate");
}

namespace {

// A TLS session to the console at `port` (the test's own server: its certificate is not checked),
// with a receive buffer of `receive_buffer` bytes (0: the system's).
struct TlsClient {
  TlsClient(SSL_CTX* ctx, int port, int receive_buffer = 0)
      : fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)), ssl(SSL_new(ctx)) {
    if (receive_buffer > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0);
    SSL_set_fd(ssl, fd);
    REQUIRE(SSL_connect(ssl) == 1);
  }
  ~TlsClient() {
    SSL_free(ssl);
    ::close(fd);  // with the answer unread: a reset
  }
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;
  void send(const std::string& bytes) { REQUIRE(SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size())) > 0); }
  int fd;
  SSL* ssl;
};

}  // namespace

TEST_CASE("HTTPS clients that reset their connections while the console answers leave it serving", "[browser][tls]") {
  const TlsFiles tls;
  RunningEngine env;
  Console console(env.engine, {.listen = "127.0.0.1:0", .tls_cert = tls.made.cert, .tls_key = tls.made.key});
  console.start();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  const std::string request =
      "GET /assets/console.js HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(console.port()) + "\r\n\r\n";
  // A client that asks for a script (27 KB) and reads none of it, so the console's writes wait;
  // then it hangs up (a FIN) and goes (a reset). The console's next write() meets the reset
  // socket: EPIPE, and SIGPIPE, which would end this process, console and all.
  for (int i = 0; i < 3; ++i) {
    TlsClient client(ctx, console.port(), 1024);
    client.send(request);
    std::this_thread::sleep_for(300ms);
    ::shutdown(client.fd, SHUT_WR);
    std::this_thread::sleep_for(50ms);
  }
  std::this_thread::sleep_for(300ms);
  TlsClient last(ctx, console.port());
  last.send(request);
  char answer[16] = "";
  CHECK(SSL_read(last.ssl, answer, sizeof answer - 1) > 0);
  CHECK(std::string(answer).rfind("HTTP/1.1 200", 0) == 0);
  SSL_CTX_free(ctx);
}
