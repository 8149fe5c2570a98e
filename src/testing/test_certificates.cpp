// make_test_certificates: a CA and a server certificate it signed, made with the openssl program.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <arpa/inet.h>

#include <fstream>
#include <stdexcept>
#include <system_error>

#include "durable/testing.hpp"

extern char** environ;

namespace durable::testing {
namespace {

namespace fs = std::filesystem;

// Runs openssl with `args`, its output appended to `log`; throws with the log's text on a failure.
void openssl(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  std::string program = "openssl";
  argv.push_back(program.data());
  std::vector<std::string> copies = args;
  for (auto& arg : copies) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, "openssl", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    throw std::system_error(spawned, std::generic_category(),
                            "durable::testing: cannot run openssl (Debian: apt install openssl)");
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "durable::testing: waitpid");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  throw std::runtime_error(fmt::format("durable::testing: openssl {} failed:\n{}", args.front(), output));
}

bool is_ip_address(const std::string& name) {
  unsigned char address[16];
  return ::inet_pton(AF_INET, name.c_str(), address) == 1 || ::inet_pton(AF_INET6, name.c_str(), address) == 1;
}

}  // namespace

TestCertificates make_test_certificates(const std::filesystem::path& dir, const std::vector<std::string>& host_names) {
  if (host_names.empty()) throw std::invalid_argument("durable::testing: a certificate needs a host name at least");
  fs::create_directories(dir);
  TestCertificates made{dir / "ca.crt", dir / "server.crt", dir / "server.key"};
  const fs::path ca_key = dir / "ca.key";
  const fs::path log = dir / "openssl.log";
  // P-256 keys: made at once, and every TLS client takes them.
  const std::vector<std::string> new_key = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-noenc"};
  std::vector<std::string> ca = {"req",     "-x509",
                                 "-days",   "30",
                                 "-subj",   "/CN=durable test CA",
                                 "-addext", "basicConstraints=critical,CA:TRUE",
                                 "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                                 "-keyout", ca_key.string(),
                                 "-out",    made.ca_cert.string()};
  ca.insert(ca.begin() + 2, new_key.begin(), new_key.end());
  openssl(ca, log);
  std::vector<std::string> request = {"req",     "-new",
                                      "-subj",   "/CN=" + host_names.front(),
                                      "-keyout", made.key.string(),
                                      "-out",    (dir / "server.csr").string()};
  request.insert(request.begin() + 2, new_key.begin(), new_key.end());
  openssl(request, log);
  std::string names;
  for (const auto& name : host_names) {
    names += fmt::format("{}{}:{}", names.empty() ? "" : ",", is_ip_address(name) ? "IP" : "DNS", name);
  }
  std::ofstream(dir / "server.ext") << "subjectAltName=" << names
                                    << "\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                                       "extendedKeyUsage=serverAuth\n";
  openssl({"x509", "-req", "-days", "30", "-in", (dir / "server.csr").string(), "-CA", made.ca_cert.string(), "-CAkey",
           ca_key.string(), "-CAcreateserial", "-CAserial", (dir / "ca.srl").string(), "-extfile",
           (dir / "server.ext").string(), "-out", made.cert.string()},
          log);
  fs::permissions(made.key, fs::perms::owner_read | fs::perms::owner_write);  // as PostgreSQL requires
  return made;
}

}  // namespace durable::testing
