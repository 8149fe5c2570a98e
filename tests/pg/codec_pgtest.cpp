#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "base/log.hpp"
#include "support/expect.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/xor_codec.hpp"

using namespace durable;
using namespace durable::test;

namespace {

// Every value the tests store carries this, so a plaintext copy anywhere is found by it. The '!'
// is in no hex, base64 or uuid text: the marker cannot turn up in an encoded value by chance.
constexpr const char* marker = "ZQ!MARK";

std::shared_ptr<const PayloadCodec> codec(std::map<std::string, std::string> secrets, std::string write_key) {
  return std::make_shared<XorCodec>(std::move(secrets), std::move(write_key));
}

std::string marked(const std::string& what) { return std::string(marker) + "-" + what; }

struct MarkedEchoActivity {
  static constexpr auto name = "codec_echo";
  static std::optional<std::string> idempotency_key(const std::string& in) {
    return "echo:" + std::to_string(in.size());
  }
  std::string operator()(ActivityContext&, const std::string& in) const { return in + "-" + marked("activity-result"); }
};

// Attempt 1 leaves a heartbeat and fails; attempt 2 returns what the heartbeat said.
struct MarkedHeartbeatActivity {
  static constexpr auto name = "codec_heartbeat";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 2}}; }
  std::string operator()(ActivityContext& ctx, const std::string&) const {
    if (ctx.attempt() == 1) {
      ctx.heartbeat({{"progress", marked("heartbeat")}});
      throw std::runtime_error(marked("retried-error"));
    }
    return ctx.last_heartbeat().at("progress").get<std::string>();
  }
};

struct MarkedFailureActivity {
  static constexpr auto name = "codec_failure";
  std::string operator()(ActivityContext&, const std::string&) const {
    throw NonRetryableError(marked("activity-error"));
  }
};

// Every kind of user payload: input, activity inputs and results, a heartbeat, errors, a message,
// an event and the result.
struct MarkedWorkflow {
  static constexpr auto name = "codec_marked";
  std::vector<std::string> operator()(WorkflowContext& ctx, const std::string& in) {
    std::vector<std::string> seen{in};
    seen.push_back(ctx.call<MarkedEchoActivity>(marked("activity-input")));
    seen.push_back(ctx.call<MarkedHeartbeatActivity>(marked("heartbeat-input")));
    try {
      ctx.call<MarkedFailureActivity>(marked("failure-input"));
    } catch (const ActivityFailed& e) {
      seen.push_back(e.what());
    }
    ctx.set_event("progress", marked("event"));
    seen.push_back(ctx.receive<std::string>("note"));
    seen.push_back(marked("result"));
    return seen;
  }
};

struct MarkedFailingWorkflow {
  static constexpr auto name = "codec_failing";
  std::string operator()(WorkflowContext&, const std::string& in) { throw std::runtime_error(in + "-workflow-error"); }
};

// Fails its first attempt; the second runs 3 s later.
struct MarkedRetryActivity {
  static constexpr auto name = "codec_retry";
  static ActivityOptions options() { return {.retry = RetryPolicy{.max_attempts = 2, .base = 3s}}; }
  std::string operator()(ActivityContext& ctx, const std::string& in) const {
    if (ctx.attempt() == 1) throw std::runtime_error("first attempt");
    return in;
  }
};

struct MarkedRetryWorkflow {
  static constexpr auto name = "codec_retrying";
  std::string operator()(WorkflowContext& ctx, const std::string& in) { return ctx.call<MarkedRetryActivity>(in); }
};

// Continues as new once, with its input marked again.
struct MarkedHopWorkflow {
  static constexpr auto name = "codec_hop";
  std::string operator()(WorkflowContext& ctx, const std::string& in) {
    if (in.find("-again") == std::string::npos) ctx.continue_as_new(in + "-again");
    return in + "-done";
  }
};

// Waits for a message it never gets: the test cancels it.
struct MarkedWaitWorkflow {
  static constexpr auto name = "codec_wait";
  std::string operator()(WorkflowContext& ctx, const std::string&) { return ctx.receive<std::string>("never"); }
};

void register_codec(Engine& engine) {
  register_all(engine);
  engine.add<MarkedEchoActivity>()
      .add<MarkedHeartbeatActivity>()
      .add<MarkedFailureActivity>()
      .add<MarkedWorkflow>()
      .add<MarkedFailingWorkflow>()
      .add<MarkedHopWorkflow>()
      .add<MarkedRetryActivity>()
      .add<MarkedRetryWorkflow>()
      .add<MarkedWaitWorkflow>();
}

EngineOptions with_codec(const TestDb& db, std::map<std::string, std::string> secrets = {{"k1", "first secret"}},
                         std::string write_key = "k1") {
  EngineOptions options = db.options();
  options.codec = codec(std::move(secrets), std::move(write_key));
  return options;
}

// An engine of the codec tests, started: the test workflows with a codec.
struct CodecEngine {
  explicit CodecEngine(const EngineOptions& options) : engine(options) {
    register_codec(engine);
    engine.start();
  }
  Engine engine;
};

// Each row of each table of the schema, as text, that holds the marker.
std::vector<std::string> plaintext_rows(const TestDb& db) {
  std::vector<std::string> found;
  auto tables = db.query("SELECT table_name FROM information_schema.tables WHERE table_schema = '" + db.schema() +
                         "' AND table_type = 'BASE TABLE' ORDER BY table_name");
  REQUIRE(tables.size() >= 10);
  for (const auto& t : tables) {
    const std::string table = t[0].as<std::string>();
    for (const auto& row : db.query("SELECT x::text FROM {s}." + table + " x")) {
      const std::string text = row[0].as<std::string>();
      if (text.find(marker) != std::string::npos) found.push_back(table + ": " + text.substr(0, 300));
    }
  }
  return found;
}

}  // namespace

TEST_CASE("with a codec on, no plaintext of a user's payloads is stored in any column of any table", "[pg][codec]") {
  TestDb db;
  CodecEngine coded(with_codec(db));
  Engine& engine = coded.engine;

  auto run = engine.start_workflow<MarkedWorkflow>("codec-all", marked("workflow-input"));
  REQUIRE(run.get_event<std::string>("progress", 30s) == marked("event"));
  engine.send("codec-all", "note", marked("message"));
  const auto seen = run.result(60s);
  REQUIRE(seen.size() == 6);
  CHECK(seen[0] == marked("workflow-input"));
  CHECK(seen[1] == marked("activity-input") + "-" + marked("activity-result"));
  CHECK(seen[2] == marked("heartbeat"));
  CHECK(seen[3].find(marked("activity-error")) != std::string::npos);
  CHECK(seen[4] == marked("message"));
  CHECK(seen[5] == marked("result"));

  auto failing = engine.start_workflow<MarkedFailingWorkflow>("codec-failing", marked("failing-input"));
  CHECK_THROWS_AS(failing.result(60s), WorkflowFailed);

  // The operator's view decodes too.
  const RunInfo info = engine.runs().get(run.run_id());
  CHECK(info.input == marked("workflow-input"));
  CHECK(info.result == Json(seen));
  const RunInfo failed = engine.runs().latest("codec-failing");
  CHECK(failed.error_message.find(marked("failing-input")) != std::string::npos);
  const History history = engine.runs().history(run.run_id());
  bool retried_error_seen = false;
  for (const auto& a : history.attempts) retried_error_seen |= a.error_message == marked("retried-error");
  CHECK(retried_error_seen);

  // Encoded, the values are stored with their key (JSON columns stay JSON).
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE input->'$encoded'->>'key' = 'k1'") == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE error_message LIKE '$encoded:k1:%'") == 1);

  const auto leaks = plaintext_rows(db);
  for (const auto& leak : leaks) UNSCOPED_INFO(leak);
  CHECK(leaks.empty());
}

TEST_CASE("with a codec on, children, continued runs, cancel reasons and schedule inputs store no plaintext",
          "[pg][codec]") {
  TestDb db;
  CodecEngine coded(with_codec(db));
  Engine& engine = coded.engine;

  auto child =
      engine.start_workflow<CallChildWorkflow>("codec-parent", {"codec-child", "hello", marked("child-input")});
  CHECK(child.result(60s) == "result " + Json("hello, " + marked("child-input")).dump());
  auto failed_child =
      engine.start_workflow<CallChildWorkflow>("codec-parent-2", {"codec-child-2", "codec_failing", marked("child")});
  CHECK(failed_child.result(60s).find(marked("child") + "-workflow-error") != std::string::npos);

  auto hop = engine.start_workflow<MarkedHopWorkflow>("codec-hop", marked("hop"));
  CHECK(engine.workflow<MarkedHopWorkflow>("codec-hop").result(60s) == marked("hop") + "-again-done");
  (void)hop;

  auto waiting = engine.start_workflow<MarkedWaitWorkflow>("codec-wait", marked("wait"));
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.journal WHERE kind = 'receive_started'") == 1; },
                     30s));
  waiting.cancel(marked("cancel-reason"));
  try {
    (void)waiting.result(60s);
    FAIL("a cancelled run returned");
  } catch (const WorkflowCancelled& e) {
    CHECK(e.reason() == marked("cancel-reason"));
  }

  engine.schedules().create("codec-schedule",
                            {.workflow = "hello", .input = marked("schedule-input"), .cron = "0 0 1 1 *"});
  bool listed = false;
  for (const auto& s : engine.schedules().list()) listed |= s.spec.input == marked("schedule-input");
  CHECK(listed);

  const auto leaks = plaintext_rows(db);
  for (const auto& leak : leaks) UNSCOPED_INFO(leak);
  CHECK(leaks.empty());
}

TEST_CASE("without a codec, the plaintext check finds the markers (the check itself works)", "[pg][codec]") {
  TestDb db;
  Engine engine(db.options());
  register_codec(engine);
  engine.start();
  auto run = engine.start_workflow<MarkedWorkflow>("codec-off", marked("workflow-input"));
  REQUIRE(run.get_event<std::string>("progress", 30s) == marked("event"));
  engine.send("codec-off", "note", marked("message"));
  REQUIRE(run.result(60s).size() == 6);
  std::set<std::string> tables;
  for (const auto& leak : plaintext_rows(db)) tables.insert(leak.substr(0, leak.find(':')));
  CHECK(tables ==
        std::set<std::string>{"attempts", "events", "idempotent_results", "journal", "messages", "tasks", "workflows"});
}

TEST_CASE("a stored value changed outside durable fails to decode with CodecError", "[pg][codec]") {
  TestDb db;
  CodecEngine coded(with_codec(db));
  Engine& engine = coded.engine;
  auto run = engine.start_workflow<HelloWorkflow>("codec-tampered", marked("who"));
  REQUIRE(run.result(60s) == "hello, " + marked("who"));

  // The first base64 character of the stored result, changed.
  db.query(
      "UPDATE {s}.workflows SET result = jsonb_set(result, '{{$encoded,data}}', to_jsonb(CASE WHEN "
      "left(result->'$encoded'->>"
      "'data', 1) = 'A' THEN 'B' ELSE 'A' END || substr(result->'$encoded'->>'data', 2))) WHERE workflow_id = "
      "'codec-tampered'");
  CHECK_THROWS_AS(engine.runs().get(run.run_id()), CodecError);
  try {
    (void)run.result(5s);
    FAIL("a tampered result decoded");
  } catch (const UnknownCodecKey&) {
    FAIL("a tampered value is not an unknown key");
  } catch (const CodecError& e) {
    CHECK(std::string(e.what()).find("k1") != std::string::npos);
  }
}

TEST_CASE("an activity input changed outside durable fails its attempt with CodecError, not the claim", "[pg][codec]") {
  TestDb db;
  CodecEngine coded(with_codec(db));
  Engine& engine = coded.engine;
  auto run = engine.start_workflow<MarkedRetryWorkflow>("codec-bad-input", marked("who"));
  // Attempt 1 failed; attempt 2 waits its 3 s: its input is changed meanwhile.
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.attempts") == 1; }, 30s));
  REQUIRE(db.count("UPDATE {s}.tasks SET input = jsonb_set(input, '{{$encoded,data}}', to_jsonb('AAAA' || "
                   "substr(input->'$encoded'->>'data', 5))) WHERE status = 'pending' RETURNING 1") == 1);
  try {
    (void)run.result(60s);
    FAIL("a run whose activity input was changed completed");
  } catch (const WorkflowFailed& e) {
    CHECK(std::string(e.what()).find("durable::CodecError") != std::string::npos);
  }
  CHECK(db.count("SELECT count(*) FROM {s}.attempts WHERE error_type = 'durable::CodecError'") == 1);
}

TEST_CASE("a run whose journal does not decode is blocked, not failed, naming the unknown key", "[pg][codec]") {
  TestDb db;
  {
    Engine client([&] {  // never started: the run waits, its start event under key k0
      EngineOptions o = db.options();
      o.codec = codec({{"k0", "old secret"}}, "k0");
      return o;
    }());
    register_codec(client);
    client.start_workflow<HelloWorkflow>("codec-unknown-key", marked("who"));
  }
  CodecEngine coded(with_codec(db));
  Engine& engine = coded.engine;
  REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE blocked_at IS NOT NULL") == 1; },
                     30s));
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE status = 'running' AND blocked->>'message' LIKE "
                 "'%journal does not decode%k0%'") == 1);
  CHECK_THROWS_AS(engine.runs().latest("codec-unknown-key"), UnknownCodecKey);  // its input is under k0 too
}

TEST_CASE("after a key rotation, old values stay readable while the codec knows the old key", "[pg][codec]") {
  TestDb db;
  RunId run_id;
  {
    CodecEngine coded(with_codec(db));
    Engine& engine = coded.engine;
    auto run = engine.start_workflow<HelloWorkflow>("codec-rotated", marked("before"));
    REQUIRE(run.result(60s) == "hello, " + marked("before"));
    run_id = run.run_id();
  }
  {
    CodecEngine coded(with_codec(db, {{"k1", "first secret"}, {"k2", "second secret"}}, "k2"));
    Engine& engine = coded.engine;
    CHECK(engine.runs().get(run_id).result == "hello, " + marked("before"));  // under k1
    auto run = engine.start_workflow<HelloWorkflow>("codec-rotated-2", marked("after"));
    REQUIRE(run.result(60s) == "hello, " + marked("after"));
    CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE result->'$encoded'->>'key' = 'k2'") == 1);
    CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE result->'$encoded'->>'key' = 'k1'") == 1);
  }
  {
    // A codec that dropped k1: its values fail with the unknown-key error, naming the key.
    EngineOptions options = db.options();
    options.codec = codec({{"k2", "second secret"}}, "k2");
    Engine client(options);
    register_codec(client);
    try {
      (void)client.runs().get(run_id);
      FAIL("a value under a forgotten key decoded");
    } catch (const UnknownCodecKey& e) {
      CHECK(e.key_id() == "k1");
    }
  }
  {
    // No codec at all: a run's result is a CodecError that says a codec is needed; the operator's
    // view (Engine::runs(), the tool, the console) shows the values as stored, marked encoded.
    Engine client(db.options());
    register_codec(client);
    try {
      (void)client.workflow<HelloWorkflow>("codec-rotated").result(5s);
      FAIL("an encoded value read without a codec");
    } catch (const CodecError& e) {
      CHECK(std::string(e.what()).find("no codec") != std::string::npos);
    }
    const RunInfo info = client.runs().get(run_id);
    CHECK(info.result.at("$encoded").at("key") == "k1");
    CHECK(info.input.at("$encoded").at("key") == "k1");
  }
}

TEST_CASE("plaintext values written before a codec was set stay readable with it on", "[pg][codec]") {
  TestDb db;
  RunId run_id;
  {
    Engine engine(db.options());
    register_codec(engine);
    engine.start();
    auto run = engine.start_workflow<HelloWorkflow>("codec-late", marked("plain"));
    REQUIRE(run.result(60s) == "hello, " + marked("plain"));
    run_id = run.run_id();
  }
  EngineOptions options = db.options();
  options.codec = codec({{"k1", "first secret"}}, "k1");
  Engine engine(options);
  register_codec(engine);
  CHECK(engine.runs().get(run_id).result == "hello, " + marked("plain"));
}

TEST_CASE("with a codec on, an idempotency key reused with an equal input reuses its result without a mismatch",
          "[pg][codec]") {
  TestDb db;
  EngineOptions options = db.options();
  options.codec = codec({{"k1", "first secret"}}, "k1");
  options.idempotency_input_mismatch_fails = true;
  Engine engine(options);
  register_codec(engine);
  engine.start();
  auto first = engine.start_workflow<MarkedWorkflow>("codec-idem-1", marked("one"));
  REQUIRE(first.get_event<std::string>("progress", 30s));
  engine.send("codec-idem-1", "note", marked("n"));
  REQUIRE(first.result(60s).size() == 6);
  auto second = engine.start_workflow<MarkedWorkflow>("codec-idem-2", marked("two"));
  REQUIRE(second.get_event<std::string>("progress", 30s));
  engine.send("codec-idem-2", "note", marked("n"));
  CHECK(second.result(60s).at(1) == marked("activity-input") + "-" + marked("activity-result"));
  CHECK(db.count("SELECT count(*) FROM {s}.idempotent_results WHERE input_fingerprint LIKE '$encoded:k1:%'") == 1);
}

TEST_CASE("an idempotent result stored before the codec was set is reused under it without a mismatch", "[pg][codec]") {
  TestDb db;
  const auto run_marked = [&](EngineOptions options, const std::string& id) {
    options.idempotency_input_mismatch_fails = true;
    Engine engine(options);
    register_codec(engine);
    engine.start();
    auto run = engine.start_workflow<MarkedWorkflow>(id, marked(id));
    REQUIRE(run.get_event<std::string>("progress", 30s));
    engine.send(id, "note", marked("n"));
    return run.result(60s);
  };
  REQUIRE(run_marked(db.options(), "codec-idem-before").size() == 6);
  CHECK(db.count("SELECT count(*) FROM {s}.idempotent_results WHERE input_fingerprint NOT LIKE '$encoded:%'") == 1);
  EngineOptions options = db.options();
  options.codec = codec({{"k1", "first secret"}}, "k1");
  CHECK(run_marked(options, "codec-idem-after").at(1) == marked("activity-input") + "-" + marked("activity-result"));
}

TEST_CASE("replay checks read encoded histories with the engine's codec, and say so without one", "[pg][codec]") {
  TestDb db;
  CodecEngine coded(with_codec(db));
  Engine& engine = coded.engine;
  auto run = engine.start_workflow<HelloWorkflow>("codec-replayed", marked("replayed"));
  REQUIRE(run.result(60s) == "hello, " + marked("replayed"));

  Engine no_codec(db.options());
  register_codec(no_codec);
  const Json as_stored = no_codec.runs().export_history(run.run_id());  // encoded values, as stored
  CHECK(as_stored.dump().find(marker) == std::string::npos);
  CHECK(testing::replay(as_stored, engine).ok());
  CHECK(testing::replay(engine.runs().export_history(run.run_id()), engine).ok());  // decoded at export
  try {
    (void)testing::replay(as_stored, no_codec);
    FAIL("an encoded history replayed without a codec");
  } catch (const CodecError& e) {
    CHECK(std::string(e.what()).find("key 'k1'") != std::string::npos);
  }
  const auto report = testing::check_replay(db.url(), db.schema(), engine, {.filter = {}});
  CHECK(report.replayed == 1);
  CHECK(report.ok());
}

namespace {
struct EchoesWorkflow {
  static constexpr auto name = "codec_echoes";
  std::string operator()(WorkflowContext& ctx, const std::string& in) { return ctx.call<EchoActivity>(in); }
};
}  // namespace

TEST_CASE("a payload in the form encoded values are stored in is refused, and a text that looks encoded is a value",
          "[pg][codec]") {
  TestDb db;
  for (const bool codec_on : {false, true}) {
    CAPTURE(codec_on);
    Engine engine(codec_on ? with_codec(db) : db.options());
    engine.add<EchoesWorkflow>().add<EchoActivity>();
    engine.start();
    const std::string id = codec_on ? "with-codec" : "without-codec";
    const Json look_alike = {{"$encoded", {{"key", "k1"}, {"data", "AAAA"}}}};
    expect_throw<PayloadError>([&] { engine.start_workflow("codec_echoes", id, look_alike); },
                               "the input of workflow '" + id + "'", "only field is \"$encoded\"");
    CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = '" + id + "'") == 0);
    // A JSON string is stored as JSON, never read as an encoded text, with or without a codec.
    const std::string text = "$encoded:k1:AAAA";
    CHECK(engine.start_workflow<EchoesWorkflow>(id, text).result(std::chrono::seconds{30}) == text);
  }
}

namespace {
// Fails its first attempt; the second is due a minute later (the tests skip the clock to it).
const ActivityRef<std::string, std::string> second_try{"codec_second_try"};
const WorkflowRef<std::string, std::string> second_try_flow{"codec_second_try_flow"};
void add_second_try(Engine& engine) {
  engine.add_activity(second_try,
                      [](ActivityContext& ctx, const std::string& in) {
                        if (ctx.attempt() == 1) throw std::runtime_error("first attempt");
                        return in + "-echoed";
                      },
                      {.retry = RetryPolicy{.max_attempts = 2, .base = 60s}});
}
void add_second_try_flow(Engine& engine) {
  add_second_try(engine);
  engine.add_workflow(second_try_flow,
                      [](WorkflowContext& ctx, const std::string& in) { return ctx.call(second_try, in); });
}
}  // namespace

TEST_CASE("an engine whose codec lacks an activity input's key blocks the attempt and the run, never fails them",
          "[pg][codec][blocked]") {
  TestDb db;
  RunId run_id;
  {
    // Attempt 1 runs and fails here; the task's input is stored under k1.
    Engine writer(with_codec(db));
    add_second_try_flow(writer);
    writer.start();
    run_id = writer.start_workflow(second_try_flow, "codec-missing-key", marked("input")).run_id();
    REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.attempts") == 1; }, 30s));
  }
  {
    // Attempt 2, the last, is claimed by an engine whose codec knows only k2.
    Engine keyless(with_codec(db, {{"k2", "second secret"}}, "k2"));
    add_second_try(keyless);
    keyless.start();
    testing::advance_clock(db.url(), db.schema(), 61s);
    REQUIRE(wait_until([&] { return db.count("SELECT count(*) FROM {s}.workflows WHERE blocked_at IS NOT NULL") == 1; },
                       10s));
    CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE status = 'running' AND blocked->>'message' LIKE "
                   "'%codec_second_try%k1%'") == 1);
    // Tried again later (the clock skipped past its backoff), it is blocked again: never failed.
    testing::advance_clock(db.url(), db.schema(), 1h);
    REQUIRE(wait_until([&] { return db.count("SELECT (blocked->>'times')::int FROM {s}.workflows") >= 2; }, 10s));
    CHECK(db.count("SELECT count(*) FROM {s}.attempts") == 1);  // attempt 1's failure only
    CHECK(db.count("SELECT count(*) FROM {s}.tasks WHERE status = 'pending' AND attempt = 1") == 1);
  }
  // An engine whose codec knows k1 runs attempt 2, and the run completes, no longer blocked.
  // The clock skips while no engine runs: a claim committing during the skip would keep a lease
  // computed by the old clock, two hours short (a known race of time skipping, tests only).
  testing::advance_clock(db.url(), db.schema(), 2h);
  Engine keyed(with_codec(db, {{"k2", "second secret"}, {"k1", "first secret"}}, "k2"));
  add_second_try_flow(keyed);
  keyed.start();
  WorkflowHandle<std::string> run(keyed.workflow_run(run_id));
  CHECK(run.result(30s) == marked("input") + "-echoed");
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE blocked_at IS NOT NULL") == 0);
  CHECK(db.count("SELECT (data->>'attempts')::int FROM {s}.journal WHERE kind = 'activity_completed'") == 2);
}

namespace {
struct MarkedFailedWorkflow {
  static constexpr auto name = "codec_failed_activity";
  std::string operator()(WorkflowContext& ctx, const std::string& in) { return ctx.call<MarkedFailureActivity>(in); }
};

// Everything durable logs, at every level, while it lives (and nothing to the usual sinks).
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)), level_(detail::logger().level()) {
    saved_.swap(detail::logger().sinks());
    detail::logger().sinks().push_back(sink_);
    detail::logger().set_level(spdlog::level::trace);
  }
  ~LogCapture() {
    detail::logger().sinks().swap(saved_);
    detail::logger().set_level(level_);
  }
  // Read once no engine runs any more.
  std::string text() {
    detail::logger().flush();
    return text_.str();
  }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::vector<spdlog::sink_ptr> saved_;
  spdlog::level::level_enum level_;
};
}  // namespace

TEST_CASE("with a codec on, no user text reaches the logs, the audit table or journaled reasons in plaintext",
          "[pg][codec][logs]") {
  LogCapture logs;
  {
    TestDb db;
    EngineOptions options = with_codec(db);
    Engine engine(options);
    register_codec(engine);
    engine.add<MarkedFailedWorkflow>();
    engine.start();
    const OperatorAction resume_action{"ops@example", marked("resume-reason")};
    const OperatorAction cancel_action{"ops@example", marked("cancel-reason")};

    // An activity's error message fails a run, which an operator resumes (it fails again).
    auto failing = engine.start_workflow<MarkedFailedWorkflow>("codec-logs-failed", marked("failure-input"));
    expect_throw<WorkflowFailed>([&] { failing.result(60s); }, marked("activity-error"));
    auto resumed = engine.runs().resume(failing.run_id(), resume_action);
    REQUIRE(wait_until([&] { return resumed.status() == WorkflowStatus::failed; }, 30s));
    // A message, then a cancel through the management API, and one through a handle.
    auto waiting = engine.start_workflow<MarkedWaitWorkflow>("codec-logs-wait", marked("wait"));
    engine.send("codec-logs-wait", "note", marked("message"));
    CHECK(engine.runs().cancel(waiting.run_id(), cancel_action));
    expect_throw<WorkflowCancelled>([&] { waiting.result(60s); }, marked("cancel-reason"));
    auto waiting_too = engine.start_workflow<MarkedWaitWorkflow>("codec-logs-wait-2", marked("wait"));
    CHECK(waiting_too.cancel(marked("handle-cancel-reason")));
    expect_throw<WorkflowCancelled>([&] { waiting_too.result(60s); }, marked("handle-cancel-reason"));

    // Read back through the API, decoded.
    std::set<std::string> reasons;
    for (const auto& e : engine.runs().audit()) reasons.insert(e.reason);
    CHECK(reasons == std::set<std::string>{marked("resume-reason"), marked("cancel-reason")});
    bool resume_reason_journaled = false;
    for (const auto& e : engine.runs().history(failing.run_id()).events)
      resume_reason_journaled |= e.kind == "workflow_resumed" && e.data.value("reason", "") == marked("resume-reason");
    CHECK(resume_reason_journaled);

    const auto leaks = plaintext_rows(db);
    for (const auto& leak : leaks) UNSCOPED_INFO(leak);
    CHECK(leaks.empty());
  }
  const std::string text = logs.text();
  CHECK(text.find("engine '") != std::string::npos);  // the capture works: the engine's start was logged
  std::istringstream lines(text);
  int leaked = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(marker) == std::string::npos) continue;
    UNSCOPED_INFO(line);
    ++leaked;
  }
  CHECK(leaked == 0);
}
