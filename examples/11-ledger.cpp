// A ledger in the service's own tables: transfers between accounts, each a workflow of two
// transactional activities (debit, then credit) whose writes commit together with their
// journaled results. A worker process is killed in the middle of a credit, after its UPDATE and
// before its commit; a new engine finishes every transfer, and the balances add up: no credit
// lost, none applied twice.
//
// Run: build/examples/11-ledger   (a throwaway PostgreSQL unless DURABLE_DATABASE_URL is set)
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <durable/durable.hpp>
#include <durable/pqxx.hpp>
#include <durable/testing.hpp>

using namespace std::chrono_literals;

static const std::string schema = "durable_example_ledger";
static int crash_at_credit = 0;  // the worker process dies during its Nth credit (0: never)

struct Move {
  std::string transfer_id;
  std::string account;
  long long cents = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Move, transfer_id, account, cents)

struct Transfer {
  std::string id, from, to;
  long long cents = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Transfer, id, from, to, cents)

// [transactional]
// Applies one side of a transfer to the user's own tables: the balance and an entry, in the
// transaction that also journals the step's result. Retried, it runs again from scratch.
static long long apply(durable::TransactionContext& ctx, const Move& move) {
  pqxx::work& tx = ctx.transaction();
  const pqxx::row balance =
      tx.exec_params1("UPDATE durable_example_ledger.accounts SET cents = cents + $2 WHERE id = $1 RETURNING cents",
                      move.account, move.cents);
  tx.exec_params0("INSERT INTO durable_example_ledger.entries (transfer_id, account, cents) VALUES ($1, $2, $3)",
                  move.transfer_id, move.account, move.cents);
  return balance[0].as<long long>();
}

// A crashed worker's step is retried once its 2 s lease runs out.
static durable::ActivityOptions ledger_options() {
  return {.retry = durable::RetryPolicy{.max_attempts = 5, .base = 100ms}, .timeout = 2s};
}

struct Debit {
  static constexpr auto name = "debit";
  static durable::ActivityOptions options() { return ledger_options(); }
  long long operator()(durable::TransactionContext& ctx, const Move& move) const {
    return apply(ctx, {move.transfer_id, move.account, -move.cents});
  }
};

struct Credit {
  static constexpr auto name = "credit";
  static durable::ActivityOptions options() { return ledger_options(); }
  long long operator()(durable::TransactionContext& ctx, const Move& move) const {
    const long long balance = apply(ctx, move);
    static int credits = 0;
    if (++credits == crash_at_credit) {
      fmt::print("[pid {}] credited {} with {} cents, not committed yet: the worker crashes now (SIGKILL)\n", getpid(),
                 move.account, move.cents);
      std::fflush(stdout);
      raise(SIGKILL);  // the open transaction dies with its connection: the credit is rolled back
    }
    return balance;
  }
};
// [transactional]

struct TransferFunds {
  static constexpr auto name = "transfer_funds";
  long long operator()(durable::WorkflowContext& ctx, const Transfer& t) {
    ctx.call<Debit>(Move{t.id, t.from, t.cents});
    return ctx.call<Credit>(Move{t.id, t.to, t.cents});
  }
};

static durable::EngineOptions ledger_engine(const std::string& url) {
  return {.database_url = url, .schema = schema, .lease_margin = 1s};
}

int main() {
  const std::string url = durable::testing::database_url();
  durable::testing::drop_schema(url, schema);
  const std::vector<std::string> accounts{"alice", "bob", "carol", "dave"};
  {
    pqxx::connection conn(url);
    pqxx::work tx(conn);
    tx.exec0("CREATE SCHEMA durable_example_ledger");
    tx.exec0("CREATE TABLE durable_example_ledger.accounts (id text PRIMARY KEY, cents bigint NOT NULL)");
    tx.exec0(
        "CREATE TABLE durable_example_ledger.entries (transfer_id text NOT NULL, account text NOT NULL, "
        "cents bigint NOT NULL)");
    for (const auto& a : accounts) tx.exec_params0("INSERT INTO durable_example_ledger.accounts VALUES ($1, 10000)", a);
    tx.commit();
  }
  const int transfers = 20;

  // The first worker starts the transfers, then runs them, and dies in the middle of its 7th credit.
  const pid_t worker = fork();
  if (worker == 0) {
    crash_at_credit = 7;
    durable::Engine engine(ledger_engine(url));
    engine.add<Debit>().add<Credit>().add<TransferFunds>();
    for (int i = 0; i < transfers; ++i) {
      engine.start_workflow<TransferFunds>(
          fmt::format("transfer-{}", i),
          Transfer{fmt::format("transfer-{}", i), accounts[i % 4], accounts[(i + 1) % 4], 100 + 10 * i});
    }
    engine.start();
    pause();
    _exit(1);
  }
  int status = 0;
  waitpid(worker, &status, 0);
  if (!WIFSIGNALED(status)) return 1;

  // A new engine finishes every transfer from the journal.
  durable::Engine engine(ledger_engine(url));
  engine.add<Debit>().add<Credit>().add<TransferFunds>();
  engine.start();
  for (int i = 0; i < transfers; ++i) engine.workflow<TransferFunds>(fmt::format("transfer-{}", i)).result(60s);

  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  long long total = 0;
  for (const auto& row : tx.exec("SELECT id, cents FROM durable_example_ledger.accounts ORDER BY id")) {
    fmt::print("{:<6} {:>6} cents\n", row[0].as<std::string>(), row[1].as<long long>());
    total += row[1].as<long long>();
  }
  const long long entries = tx.exec1("SELECT count(*) FROM durable_example_ledger.entries")[0].as<long long>();
  const long long unbalanced =
      tx.exec1(
            "SELECT count(*) FROM (SELECT transfer_id FROM durable_example_ledger.entries GROUP BY transfer_id "
            "HAVING count(*) <> 2 OR sum(cents) <> 0) t")[0]
          .as<long long>();
  fmt::print("total {} cents (was {}); {} entries for {} transfers, {} unbalanced\n", total, 4 * 10000, entries,
             transfers, unbalanced);
  engine.stop();
  durable::testing::drop_schema(url, schema);
  return total == 4 * 10000 && entries == 2 * transfers && unbalanced == 0 ? 0 : 1;
}
