// Transactional activities (durable/pqxx.hpp): the body's writes commit in one transaction with
// its journaled result, or not at all. Each test reads the user's rows and the journal raw.
#include <durable/pqxx.hpp>

#include <fmt/format.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "base/failpoint.hpp"
#include "support/test_db.hpp"

using namespace durable;
using namespace durable::test;
using namespace std::chrono_literals;

namespace {

struct Row {
  Row() = default;
  explicit Row(std::string k, int fail = 0, std::string how = {}, int sleep = 0)
      : key(std::move(k)), fail_first(fail), misuse(std::move(how)), sleep_ms(sleep) {}
  std::string key;
  int fail_first = 0;  // attempts that throw after their insert
  std::string misuse;  // how the body ends its transaction itself: commit, abort, sql_commit, sql_rollback, ...
  int sleep_ms = 0;    // the first attempt sleeps this long after its insert
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Row, key, fail_first, misuse, sleep_ms)

std::atomic<int> executions{0};

// Inserts one row (key, attempt) into the user's own table, then fails or misbehaves as asked.
struct InsertRow {
  static constexpr auto name = "insert_row";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 3, .base = 10ms}, .timeout = 5s}; }
  std::string table;
  int operator()(TransactionContext& ctx, const Row& r) const {
    ++executions;
    pqxx::work& tx = ctx.transaction();
    tx.exec_params0("INSERT INTO " + table + " (key, attempt) VALUES ($1, $2)", r.key, ctx.attempt());
    if (ctx.attempt() <= r.fail_first) throw std::runtime_error("failing after the insert");
    if (ctx.attempt() == 1 && r.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds{r.sleep_ms});
    if (r.misuse == "commit") tx.commit();
    if (r.misuse == "commit_caught") {
      try {
        tx.commit();
      } catch (const std::exception&) {
      }
    }
    if (r.misuse == "abort") tx.abort();
    if (r.misuse == "sql_commit") tx.exec0("COMMIT");
    if (r.misuse == "sql_rollback") tx.exec0("ROLLBACK");
    return ctx.attempt();
  }
};

struct InsertFlow {
  static constexpr auto name = "insert_flow";
  int operator()(WorkflowContext& ctx, const Row& r) { return ctx.call<InsertRow>(r); }
};

// Five transactional steps in a row: each continues the workflow in place from its transaction.
struct FiveInserts {
  static constexpr auto name = "five_inserts";
  int operator()(WorkflowContext& ctx, const std::string& key) {
    int total = 0;
    for (int i = 0; i < 5; ++i) total += ctx.call<InsertRow>(Row{fmt::format("{}-{}", key, i)});
    return total;
  }
};

// A started engine with the definitions above and the user's table `user_rows`.
struct Env {
  explicit Env(const std::function<void(EngineOptions&)>& adjust = {})
      : env(adjust, [this](Engine& e) {
          table = "\"" + env.db.schema() + "\".user_rows";
          pqxx::connection conn(env.db.url());
          pqxx::nontransaction(conn).exec0("CREATE SCHEMA \"" + env.db.schema() + "\"; CREATE TABLE " + table +
                                           " (key text NOT NULL, attempt int)");
          e.add(InsertRow{table}).add<InsertFlow>().add<FiveInserts>();
        }) {
    executions = 0;
  }
  long long rows(const std::string& key) const {
    return env.db.count("SELECT count(*) FROM {s}.user_rows WHERE key = '" + key + "'");
  }
  long long completions(const std::string& workflow_id) const {
    return env.db.count("SELECT count(*) FROM {journal} j WHERE workflow_id = '" + workflow_id +
                        "' AND kind = 'activity_completed'");
  }
  // The error type the step's failure was journaled with, and its attempts.
  std::pair<std::string, int> failure(const std::string& workflow_id) const {
    auto r =
        env.db.query("SELECT data->>'error_type', (data->>'attempts')::int FROM {journal} j WHERE workflow_id = '" +
                     workflow_id + "' AND kind = 'activity_failed'");
    if (r.empty()) return {"", 0};
    return {r[0][0].as<std::string>(), r[0][1].as<int>()};
  }
  std::string table;
  RunningEngine env;
};

struct ResetFailpoints {
  ~ResetFailpoints() { detail::configure_failpoints(""); }
};

}  // namespace

TEST_CASE("a transactional activity's writes commit with its journaled result", "[pg][transactions]") {
  Env t;
  CHECK(t.env.engine.start_workflow<InsertFlow>("one", Row{"one"}).result(30s) == 1);
  CHECK(t.rows("one") == 1);
  CHECK(t.completions("one") == 1);
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.transaction_guards") == 0);

  // Steps in a row continue the workflow in place, each from its own transaction.
  CHECK(t.env.engine.start_workflow<FiveInserts>("five", "five").result(30s) == 5);
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.user_rows WHERE key LIKE 'five-%'") == 5);
  CHECK(t.env.db.count("SELECT count(DISTINCT key) FROM {s}.user_rows WHERE key LIKE 'five-%'") == 5);
  CHECK(t.completions("five") == 5);
  CHECK(executions == 6);
}

TEST_CASE("a failing transactional body leaves no row: only the attempt that succeeds writes", "[pg][transactions]") {
  Env t;
  CHECK(t.env.engine.start_workflow<InsertFlow>("flaky", Row{"flaky", 2}).result(30s) == 3);
  CHECK(t.rows("flaky") == 1);
  CHECK(t.env.db.count("SELECT attempt FROM {s}.user_rows WHERE key = 'flaky'") == 3);
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.attempts WHERE outcome = 'failed'") == 2);

  auto doomed = t.env.engine.start_workflow<InsertFlow>("doomed", Row{"doomed", 10});
  CHECK_THROWS_AS(doomed.result(30s), WorkflowFailed);
  CHECK(t.rows("doomed") == 0);
  CHECK(t.failure("doomed") == std::pair<std::string, int>{"std::runtime_error", 3});
}

TEST_CASE("a serialization failure in the body or at COMMIT is a failed attempt: rolled back, then retried",
          "[pg][transactions]") {
  Env t;
  // Attempt 1 of these keys fails as a serializable transaction would: in the body's statement, or
  // at COMMIT (a deferred trigger on the user's table, which runs as the transaction commits).
  pqxx::connection conn(t.env.db.url());
  pqxx::nontransaction(conn).exec0(fmt::format(R"(
CREATE FUNCTION {0}.fail_first() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.attempt = 1 AND NEW.key LIKE 'serial-%' THEN
    RAISE EXCEPTION 'could not serialize access (test: %)', NEW.key USING ERRCODE = 'serialization_failure';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER in_body BEFORE INSERT ON {0}.user_rows FOR EACH ROW WHEN (NEW.key = 'serial-body')
  EXECUTE FUNCTION {0}.fail_first();
CREATE CONSTRAINT TRIGGER at_commit AFTER INSERT ON {0}.user_rows DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.key = 'serial-commit') EXECUTE FUNCTION {0}.fail_first())",
                                               "\"" + t.env.db.schema() + "\""));
  for (const std::string key : {"serial-body", "serial-commit"}) {
    CAPTURE(key);
    CHECK(t.env.engine.start_workflow<InsertFlow>(key, Row{key}).result(30s) == 2);
    CHECK(t.rows(key) == 1);  // attempt 1's insert was rolled back
    CHECK(t.env.db.count("SELECT attempt FROM {s}.user_rows WHERE key = '" + key + "'") == 2);
    CHECK(t.completions(key) == 1);
    CHECK(t.env.db.count("SELECT count(*) FROM {s}.attempts a JOIN {s}.workflows w USING (run_id) WHERE "
                         "w.workflow_id = '" +
                         key + "' AND a.outcome = 'failed' AND a.error_type = 'pqxx::serialization_failure'") == 1);
  }
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.transaction_guards") == 0);
}

TEST_CASE("a body that ends its transaction itself fails with TransactionMisuse and commits nothing",
          "[pg][transactions]") {
  const std::string how = GENERATE("commit", "commit_caught", "abort", "sql_commit", "sql_rollback");
  CAPTURE(how);
  Env t;
  auto run = t.env.engine.start_workflow<InsertFlow>("misuse", Row{"misuse", 0, how});
  CHECK_THROWS_AS(run.result(30s), WorkflowFailed);
  CHECK(t.rows("misuse") == 0);
  CHECK(t.failure("misuse") == std::pair<std::string, int>{"durable::TransactionMisuse", 1});  // not retried
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.transaction_guards") == 0);
  // The engine goes on: its sessions are still good for the next body.
  CHECK(t.env.engine.start_workflow<InsertFlow>("after", Row{"after"}).result(30s) == 1);
  CHECK(t.rows("after") == 1);
}

TEST_CASE("a commit whose connection is lost before it arrives commits nothing, and the retry writes once",
          "[pg][transactions][faults]") {
  ResetFailpoints reset;
  Env t;
  detail::configure_failpoints("transaction.connection_lost=fail@1");
  CHECK(t.env.engine.start_workflow<InsertFlow>("cut", Row{"cut"}).result(30s) == 2);
  CHECK(executions == 2);
  CHECK(t.rows("cut") == 1);
  CHECK(t.env.db.count("SELECT attempt FROM {s}.user_rows WHERE key = 'cut'") == 2);
  CHECK(t.completions("cut") == 1);
}

TEST_CASE("a commit whose answer is lost is read back: committed once, the body not run again",
          "[pg][transactions][faults]") {
  ResetFailpoints reset;
  Env t;
  detail::configure_failpoints("lost_answer.activity_transaction=fail@1");
  CHECK(t.env.engine.start_workflow<FiveInserts>("lost", "lost").result(30s) == 5);
  CHECK(executions == 5);
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.user_rows WHERE key LIKE 'lost-%'") == 5);
  CHECK(t.completions("lost") == 5);
}

TEST_CASE("a body that runs past its timeout is rolled back: only the next attempt's writes commit",
          "[pg][transactions]") {
  Env t;
  const Row slow{"slow", 0, "", 7000};  // its timeout is 5 s
  CHECK(t.env.engine.start_workflow<InsertFlow>("slow", slow).result(60s) == 2);
  CHECK(t.rows("slow") == 1);
  CHECK(t.env.db.count("SELECT attempt FROM {s}.user_rows WHERE key = 'slow'") == 2);
  std::this_thread::sleep_for(2500ms);  // the first body returns now, late: nothing of it may commit
  CHECK(t.rows("slow") == 1);
  CHECK(t.completions("slow") == 1);
}

namespace {
// Moves cents between two accounts, locking the source first: two opposite transfers at once
// deadlock, and PostgreSQL picks one to fail.
struct Transfer {
  int from = 0;
  int to = 0;
  int cents = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Transfer, from, to, cents)
std::atomic<int> first_locks{0};

struct Move {
  static constexpr auto name = "move";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 5, .base = 10ms}}; }
  std::string table;
  int operator()(TransactionContext& ctx, const Transfer& t) const {
    pqxx::work& tx = ctx.transaction();
    tx.exec_params0("UPDATE " + table + " SET cents = cents - $2 WHERE id = $1", t.from, t.cents);
    if (ctx.attempt() == 1) {  // both hold their first lock before either asks for its second
      ++first_locks;
      for (int i = 0; i < 500 && first_locks < 2; ++i) std::this_thread::sleep_for(10ms);
    }
    tx.exec_params0("UPDATE " + table + " SET cents = cents + $2 WHERE id = $1", t.to, t.cents);
    return ctx.attempt();
  }
};
struct MoveFlow {
  static constexpr auto name = "move_flow";
  int operator()(WorkflowContext& ctx, const Transfer& t) { return ctx.call<Move>(t); }
};
}  // namespace

TEST_CASE("a deadlock between transactional bodies is a failed attempt, retried under its policy",
          "[pg][transactions]") {
  first_locks = 0;
  TestDb db;
  const std::string table = "\"" + db.schema() + "\".accounts";
  EngineOptions options = db.options();
  Engine engine(options);
  {
    engine.runs().count_by_status({});  // migrates the schema
    pqxx::connection conn(db.url());
    pqxx::nontransaction(conn).exec0("CREATE TABLE " + table + " (id int PRIMARY KEY, cents bigint NOT NULL);" +
                                     "INSERT INTO " + table + " VALUES (1, 1000), (2, 1000)");
  }
  engine.add(Move{table}).add<MoveFlow>();
  engine.start();
  auto a = engine.start_workflow<MoveFlow>("a", Transfer{1, 2, 100});
  auto b = engine.start_workflow<MoveFlow>("b", Transfer{2, 1, 30});
  const int attempts = a.result(60s) + b.result(60s);
  CHECK(attempts == 3);  // one of them was chosen to fail, once
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE error_type = 'pqxx::deadlock_detected'") == 1);
  CHECK(db.count("SELECT cents FROM {s}.accounts WHERE id = 1") == 930);
  CHECK(db.count("SELECT cents FROM {s}.accounts WHERE id = 2") == 1070);
}

TEST_CASE("a plain callable taking a TransactionContext registers a transactional activity", "[pg][transactions]") {
  TestDb db;
  const ActivityRef<std::string, std::string> echo{"echo_in_transaction"};
  const WorkflowRef<std::string, std::string> flow{"echo_flow"};
  Engine engine(db.options());
  engine.add_activity(echo, [](TransactionContext& ctx, const std::string& s) {
    return ctx.transaction().exec_params1("SELECT upper($1)", s)[0].as<std::string>();
  });
  engine.add_workflow(flow, [echo](WorkflowContext& ctx, const std::string& s) { return ctx.call(echo, s); });
  engine.start();
  CHECK(engine.start_workflow(flow, "e", "shout").result(30s) == "SHOUT");
}

namespace {
// Eight one-step runs of InsertFlow started before the engine is, so that their bodies run at
// about the same time (it claims them together) and share transactions. Each first attempt holds
// its turn on the shared session 8 ms, long enough for the next to queue behind it.
struct Together {
  Together() : engine(db.options()) {
    table = "\"" + db.schema() + "\".user_rows";
    engine.runs().count_by_status({});  // migrates the schema
    pqxx::connection conn(db.url());
    // Each row says which transaction wrote it: rows of one transaction shared one commit.
    pqxx::nontransaction(conn).exec0("CREATE TABLE " + table +
                                     " (key text NOT NULL, attempt int, xact xid8 DEFAULT pg_current_xact_id(), at "
                                     "timestamptz DEFAULT clock_timestamp())");
    engine.add(InsertRow{table}).add<InsertFlow>();
    executions = 0;
  }
  // Starts the runs, then the engine, and waits for each run's end: its result, or -1 if it failed.
  std::vector<int> run(const std::vector<Row>& rows) {
    std::vector<WorkflowHandle<int>> runs;
    for (const Row& r : rows) runs.push_back(engine.start_workflow<InsertFlow>(r.key, r));
    engine.start();
    std::vector<int> results;
    for (auto& run : runs) {
      try {
        results.push_back(run.result(60s));
      } catch (const WorkflowFailed&) {
        results.push_back(-1);
      }
    }
    return results;
  }
  long long count(const std::string& sql) { return db.count(sql); }
  std::string text(const std::string& sql) { return db.query(sql)[0][0].c_str(); }
  TestDb db;
  std::string table;
  Engine engine;
};
}  // namespace

TEST_CASE("transactional bodies that run at once share a commit, and one that fails rolls back alone",
          "[pg][transactions]") {
  Together t;
  std::vector<Row> rows;
  constexpr int runs = 16;
  for (int i = 0; i < runs; ++i) rows.emplace_back(fmt::format("k{}", i), i % 2, "", 8);  // every other fails once
  const std::vector<int> results = t.run(rows);
  for (int i = 0; i < runs; ++i) CHECK(results[i] == 1 + i % 2);
  // Each key's one row, written by the attempt that succeeded.
  CHECK(t.count("SELECT count(*) FROM {s}.user_rows") == runs);
  CHECK(t.count("SELECT count(DISTINCT key) FROM {s}.user_rows") == runs);
  CHECK(t.count("SELECT count(*) FROM {s}.user_rows WHERE attempt = 1 + substr(key, 2)::int % 2") == runs);
  // No body ran but the first attempts and the retries of half of them: a failing body took none
  // of the bodies it shared a transaction with down with it.
  CHECK(executions == runs + runs / 2);
  // Fewer transactions than steps: steps shared commits (each its own before). Each row says when
  // it was written, by which transaction.
  const long long transactions = t.count("SELECT count(DISTINCT xact) FROM {s}.user_rows");
  CAPTURE(transactions);
  CAPTURE(
      t.text("SELECT string_agg(key || ':' || attempt || ':' || xact || ':' || to_char(at, 'SS.MS'), ' ' "
             "ORDER BY at) FROM {s}.user_rows"));
  CHECK(transactions < runs);
  CHECK(t.count("SELECT count(*) FROM {s}.transaction_guards") == 0);
}

TEST_CASE("a body that ends a shared transaction fails alone: the bodies it shared it with run again, once",
          "[pg][transactions]") {
  Together t;
  std::vector<Row> rows;
  // Every other body commits the transaction itself (and catches what that throws).
  for (int i = 0; i < 8; ++i) rows.emplace_back(fmt::format("k{}", i), 0, i % 2 ? "commit_caught" : "", 8);
  const std::vector<int> results = t.run(rows);
  for (int i = 0; i < 8; ++i) CHECK(results[i] == (i % 2 ? -1 : 1));
  CHECK(t.count("SELECT count(*) FROM {s}.user_rows WHERE substr(key, 2)::int % 2 = 1") == 0);
  CHECK(t.count("SELECT count(*) FROM {s}.user_rows") == 4);
  CHECK(t.count("SELECT count(DISTINCT key) FROM {s}.user_rows") == 4);
  CHECK(t.count("SELECT count(*) FROM {journal} j WHERE kind = 'activity_failed' AND "
                "data->>'error_type' = 'durable::TransactionMisuse' AND (data->>'attempts')::int = 1") == 4);
  // The steps handed back were not counted as attempts: each succeeded at its first.
  CAPTURE(executions.load());  // more than 8: bodies that shared a transaction with one that ended it ran again
  CHECK(t.count("SELECT count(*) FROM {s}.attempts WHERE error_type IS DISTINCT FROM 'durable::TransactionMisuse'") ==
        0);
  CHECK(t.count("SELECT count(*) FROM {s}.transaction_guards") == 0);
}
