#include "pg/connect_errors.hpp"

#include <fmt/format.h>

#include <array>

#include "base/printable.hpp"

namespace durable::pg {

namespace {

struct Refusal {
  const char* says;  // in libpq's message
  const char* also;  // and this too ("" for nothing more)
  const char* change;
};

// What libpq (15) says, and what to change (docs/operations.md, TLS).
constexpr std::array<Refusal, 10> refusals{{
    {"certificate verify failed", "",
     "the server's certificate is not signed by the CA libpq trusts: set sslrootcert= to the certificate of the CA "
     "that signed it"},
    {"does not match host name", "",
     "the URL's host is not a name the server's certificate holds: connect by a name in its subjectAltName (add "
     "hostaddr= to choose the address), or have a certificate made for this name"},
    {"root certificate file", "",
     "sslmode=verify-ca and verify-full need the CA's certificate: set sslrootcert= to its file (the default is "
     "~/.postgresql/root.crt)"},
    {"server does not support SSL", "",
     "the server has TLS off: turn ssl on in its postgresql.conf, or lower sslmode (not in production)"},
    {"no pg_hba.conf entry", "",
     "the server's pg_hba.conf accepts no connection of this kind: if the message says \"no encryption\", connect "
     "with sslmode=verify-full; otherwise ask for an entry for this host, role and database"},
    {"pg_hba.conf rejects connection", "",
     "the server's pg_hba.conf refuses connections of this kind: if the message says \"no encryption\", connect "
     "with sslmode=verify-full; otherwise ask for an entry for this host, role and database"},
    {"password authentication failed", "", "check the URL's user and password"},
    // PgBouncer's, for a user it does not know.
    {"\"trust\" authentication failed", "",
     "through PgBouncer, the URL's user must be one it knows (its auth_file, or its auth_query)"},
    {"role \"", "does not exist", "the URL's user is no role of the server: create it or fix the URL"},
    {"database \"", "does not exist", "the URL's database does not exist on the server: create it or fix the URL"},
}};

}  // namespace

std::optional<DatabaseRefused> refused_for_good(const std::string& message) {
  for (const Refusal& r : refusals) {
    if (message.find(r.says) == std::string::npos || message.find(r.also) == std::string::npos) continue;
    std::string what = message;
    while (!what.empty() && (what.back() == '\n' || what.back() == ' ')) what.pop_back();
    return DatabaseRefused(
        fmt::format("the database refused this connection, and would again: {}: {}", detail::printable(what), r.change),
        "");
  }
  return std::nullopt;
}

}  // namespace durable::pg
