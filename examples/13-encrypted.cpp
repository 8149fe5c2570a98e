// Card numbers in a workflow, kept out of the database: an engine with a payload codec (the
// libsodium SodiumCodec of examples/codec/) charges a card, then every row of every durable table
// is read raw to show the card number is in none of them. Then a key rotation: an engine with the
// keys "k2,k1" reads the first run under k1 and writes a new one under k2; one that dropped k1
// can no longer read the first run.
//
// Run: build/examples/13-encrypted   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <durable/durable.hpp>
#include <durable/testing.hpp>

#include <memory>
#include <pqxx/pqxx>

#include "codec/sodium_codec.hpp"

using namespace std::chrono_literals;

static const std::string schema = "durable_example_encrypted";

struct Card {
  std::string order_id;
  std::string number;
  long long cents = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Card, order_id, number, cents)

struct ChargeCard {
  static constexpr auto name = "charge_card";
  std::string operator()(durable::ActivityContext&, const Card& card) const {
    return fmt::format("charged {} cents to {} for {}", card.cents, card.number, card.order_id);
  }
};

struct Checkout {
  static constexpr auto name = "checkout";
  std::string operator()(durable::WorkflowContext& ctx, const Card& card) { return ctx.call<ChargeCard>(card); }
};

// [codec]
// Keys as "id=<64 hex digits>", the current one first; a service reads them from its secret store.
static durable::EngineOptions encrypted(const std::string& url, const std::string& keys) {
  return {.database_url = url,
          .schema = schema,
          .codec = std::make_shared<durable_sodium::SodiumCodec>(keys, "the example's keys")};
}
// [codec]

// Rows of the schema's tables whose text holds `secret`; `rows` counts every row read.
static int rows_holding(pqxx::connection& conn, const std::string& secret, int& tables, int& rows) {
  pqxx::nontransaction tx(conn);
  int found = 0;
  for (const auto& t : tx.exec_params(
           "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
           schema)) {
    ++tables;
    for (const auto& row : tx.exec("SELECT x::text FROM " + schema + "." + t[0].as<std::string>() + " x")) {
      ++rows;
      if (row[0].as<std::string>().find(secret) != std::string::npos) ++found;
    }
  }
  return found;
}

int main() {
  const std::string url = durable::testing::database_url();
  durable::testing::drop_schema(url, schema);
  const std::string k1 = "k1=" + durable_sodium::SodiumCodec::generate_key_hex();
  const std::string k2 = "k2=" + durable_sodium::SodiumCodec::generate_key_hex();
  const Card card{"order-1", "4111 1111 1111 1111", 4200};

  {
    durable::Engine engine(encrypted(url, k1));
    engine.add<ChargeCard>().add<Checkout>();
    engine.start();
    fmt::print("order-1: {}\n", engine.start_workflow<Checkout>("order-1", card).result(60s));
  }

  pqxx::connection conn(url);
  int tables = 0, rows = 0;
  const int leaks = rows_holding(conn, card.number, tables, rows);
  fmt::print("raw scan: {} rows in {} tables, {} with the card number in plaintext\n", rows, tables, leaks);
  const auto stored = pqxx::nontransaction(conn).exec1("SELECT input::text FROM " + schema +
                                                       ".workflows WHERE workflow_id = 'order-1'")[0];
  fmt::print("order-1's input as stored: {:.90}...\n", stored.as<std::string>());

  // The rotation: new values under k2, and k1 kept to read what was written under it.
  {
    durable::Engine engine(encrypted(url, k2 + "," + k1));
    engine.add<ChargeCard>().add<Checkout>();
    engine.start();
    fmt::print("after the rotation, order-1 reads: {}\n", engine.runs().latest("order-1").result.get<std::string>());
    const Card second{"order-2", "5500 0000 0000 0004", 990};
    fmt::print("order-2: {}\n", engine.start_workflow<Checkout>("order-2", second).result(60s));
  }
  for (const auto& row : pqxx::nontransaction(conn).exec("SELECT workflow_id, result->'$encoded'->>'key' FROM " +
                                                         schema + ".workflows ORDER BY workflow_id")) {
    fmt::print("  {} stored under key {}\n", row[0].as<std::string>(), row[1].as<std::string>());
  }

  // An engine that dropped k1 too soon: the values written under it no longer decode.
  bool refused = false;
  try {
    durable::Engine engine(encrypted(url, k2));
    (void)engine.runs().latest("order-1");
  } catch (const durable::UnknownCodecKey& e) {
    refused = e.key_id() == "k1";
    fmt::print("without k1: durable::UnknownCodecKey: {}\n", e.what());
  }
  durable::testing::drop_schema(url, schema);
  return leaks == 0 && rows > 0 && refused ? 0 : 1;
}
