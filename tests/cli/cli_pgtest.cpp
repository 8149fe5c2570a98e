// The `durable` command-line tool against a real PostgreSQL: every verb run as a user runs it (the
// binary, in a shell), its JSON parsed and its text compared, its effect read from the database,
// and bad input checked for its message and exit code.
#include <httplib.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/process.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/xor_codec.hpp"

using namespace durable;
using namespace durable::test;

namespace {

struct Outcome {
  int code = -1;
  std::string out, err;
  Json json() const { return Json::parse(out); }
};

std::string quoted(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `durable ARGS` on the test's schema (unless `on_schema` is false) and captures everything.
Outcome cli(const TestDb& db, const std::vector<std::string>& args, bool on_schema = true) {
  static int n = 0;
  const std::string base = fmt::format("/tmp/durable-cli-test-{}-{}", getpid(), n++);
  std::string command = quoted(DURABLE_CLI);
  if (on_schema) command += " --database-url " + quoted(db.url()) + " --schema " + quoted(db.schema());
  for (const auto& a : args) command += " " + quoted(a);
  command += " >" + base + ".out 2>" + base + ".err";
  const int status = std::system(command.c_str());
  Outcome o{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base + ".out"), slurp(base + ".err")};
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  INFO("durable " << fmt::format("{}", fmt::join(args, " ")) << "\nstdout: " << o.out << "\nstderr: " << o.err);
  return o;
}

// Times and run ids replaced by fixed ones of the same width: what stays the same from run to run.
std::string stable(std::string text) {
  text = std::regex_replace(text, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"), "2000-01-01T00:00:00.000Z");
  text = std::regex_replace(text, std::regex(R"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"),
                            "00000000-0000-0000-0000-000000000000");
  return text;
}

const std::string marker = "plain_TEXT-marker!";

struct Fleet : RunningEngine {
  Fleet() {
    engine.start_workflow<HelloWorkflow>("hello-1", "ada").result(10s);
    engine.start_workflow<FailingWorkflow>("failing-1", "on purpose");
    engine.start_workflow<InboxWorkflow>("inbox-1", InboxInput{});
    REQUIRE(wait_until([&] { return engine.runs().latest("failing-1").status == WorkflowStatus::failed; }));
  }
};

}  // namespace

TEST_CASE("migrate creates the schema, --check says whether it is behind, and no other verb migrates", "[pg][cli]") {
  TestDb db;
  auto behind = cli(db, {"migrate", "--check"});
  CHECK(behind.code == 1);
  CHECK(behind.err == fmt::format("durable: schema '{}' is behind: run `durable migrate`\n", db.schema()));
  auto list = cli(db, {"workflows", "list"});
  CHECK(list.code == 3);
  CHECK(list.err.find("durable migrate") != std::string::npos);
  CHECK_FALSE(db.schema_exists());

  auto first = cli(db, {"migrate"});
  CHECK(first.code == 0);
  CHECK(first.out == fmt::format("schema '{}' migrated from version 0 to {}\n", db.schema(), latest_schema_version()));
  auto again = cli(db, {"migrate", "--json"});
  CHECK(again.json()["version"] == latest_schema_version());
  CHECK(again.json()["migrated_from"] == latest_schema_version());
  auto check = cli(db, {"--json", "migrate", "--check"});
  CHECK(check.code == 0);
  CHECK(check.json()["up_to_date"] == true);
}

TEST_CASE("migrate --engine-role and --reader-role grant those roles the schema, and refuse a role not there",
          "[pg][cli]") {
  TestDb db;
  const std::string engine_role = db.schema() + "_engine";
  db.query("CREATE ROLE " + engine_role);
  auto granted = cli(db, {"migrate", "--engine-role", engine_role, "--reader-role", engine_role});
  CHECK(granted.code == 0);
  CHECK(granted.out.find(fmt::format("granted: engine roles [{0}], reader roles [{0}]\n", engine_role)) !=
        std::string::npos);
  CHECK(db.count(fmt::format("SELECT count(*) FROM information_schema.role_table_grants WHERE grantee = '{}' AND "
                             "table_schema = '{}' AND table_name = 'workflows' AND privilege_type = 'DELETE'",
                             engine_role, db.schema())) == 1);
  auto missing = cli(db, {"migrate", "--engine-role", "no_such_role_here"});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("role 'no_such_role_here' does not exist") != std::string::npos);
  CHECK(cli(db, {"migrate", "--check", "--reader-role", engine_role}).code == 2);
  testing::drop_schema(db.url(), db.schema());
  db.query(fmt::format("DROP OWNED BY {0}; DROP ROLE {0}", engine_role));
}

TEST_CASE_METHOD(Fleet, "workflows list filters and pages runs, as text and as JSON", "[pg][cli]") {
  auto all = cli(db, {"workflows", "list", "--json"});
  REQUIRE(all.code == 0);
  CHECK(all.json()["runs"].size() == 3);
  CHECK(all.json()["next_cursor"] == "");

  auto failed = cli(db, {"workflows", "list", "--status", "failed", "--json"});
  REQUIRE(failed.json()["runs"].size() == 1);
  CHECK(failed.json()["runs"][0]["workflow_id"] == "failing-1");
  CHECK(
      cli(db, {"workflows", "list", "--status", "running", "--status", "completed", "--json"}).json()["runs"].size() ==
      2);
  CHECK(cli(db, {"workflows", "list", "--name", "inbox", "--json"}).json()["runs"][0]["workflow_id"] == "inbox-1");
  CHECK(cli(db, {"workflows", "list", "--id-prefix", "hel", "--json"}).json()["runs"].size() == 1);
  CHECK(cli(db, {"workflows", "list", "--since", "1h", "--json"}).json()["runs"].size() == 3);
  CHECK(cli(db, {"workflows", "list", "--until", "2020-01-01", "--json"}).json()["runs"].empty());
  CHECK(cli(db, {"workflows", "list", "--blocked", "--json"}).json()["runs"].empty());
  CHECK(cli(db, {"workflows", "list", "--app-version", "", "--json"}).json()["runs"].size() == 3);

  auto page1 = cli(db, {"workflows", "list", "--limit", "2", "--json"});
  REQUIRE(page1.json()["runs"].size() == 2);
  const std::string cursor = page1.json()["next_cursor"];
  REQUIRE_FALSE(cursor.empty());
  auto page2 = cli(db, {"workflows", "list", "--limit", "2", "--cursor", cursor, "--json"});
  REQUIRE(page2.json()["runs"].size() == 1);
  CHECK(page2.json()["runs"][0]["workflow_id"] == "hello-1");  // the oldest, last
  CHECK(stable(cli(db, {"workflows", "list", "--limit", "2"}).out).find("more: --cursor ") != std::string::npos);

  CHECK(stable(cli(db, {"workflows", "list", "--name", "hello"}).out) ==
        "WORKFLOW ID  NAME   STATUS     STARTED BY  CREATED                   ENDED                     APP VERSION  "
        "RUN ID\n"
        "hello-1      hello  completed  call        2000-01-01T00:00:00.000Z  2000-01-01T00:00:00.000Z  -            "
        "00000000-0000-0000-0000-000000000000\n");
}

TEST_CASE_METHOD(Fleet, "workflows show, history and export read a run", "[pg][cli]") {
  auto show = cli(db, {"workflows", "show", "failing-1", "--json"});
  REQUIRE(show.code == 0);
  const Json run = show.json();
  CHECK(run["status"] == "failed");
  CHECK(run["input"] == "on purpose");
  CHECK(run["error_message"].get<std::string>().find("workflow gave up: on purpose") != std::string::npos);
  auto text = cli(db, {"workflows", "show", "hello-1"});
  CHECK(stable(text.out).find("status        completed\n") != std::string::npos);
  CHECK(text.out.find("result        \"hello, ada\"") != std::string::npos);
  auto by_run = cli(db, {"workflows", "show", "hello-1", "--run", run["run_id"], "--json"});
  CHECK(by_run.code == 1);
  CHECK(by_run.err.find("is not a run of workflow 'hello-1'") != std::string::npos);

  auto history = cli(db, {"workflows", "history", "failing-1", "--json"});
  REQUIRE(history.code == 0);
  const Json h = history.json();
  CHECK(h["events"][0]["kind"] == "workflow_started");
  CHECK(h["events"].back()["kind"] == "workflow_failed");
  REQUIRE_FALSE(h["attempts"].empty());
  CHECK(h["attempts"][0]["activity"] == "echo");
  auto timeline = cli(db, {"workflows", "history", "failing-1"});
  CHECK(timeline.out.find("SEQ  AT") != std::string::npos);
  CHECK(timeline.out.find("workflow_failed") != std::string::npos);
  CHECK(timeline.out.find("attempts\nSTEP  ACTIVITY  ATTEMPT") != std::string::npos);

  auto exported = cli(db, {"workflows", "export", "hello-1"});
  REQUIRE(exported.code == 0);
  CHECK(exported.json()["format"] == history_format);
}

TEST_CASE_METHOD(Fleet, "actions need a reason, change nothing in a dry run, and are audited", "[pg][cli]") {
  auto no_reason = cli(db, {"workflows", "cancel", "inbox-1"});
  CHECK(no_reason.code == 2);
  CHECK(no_reason.err == "durable: --reason is required (see --help)\n");

  auto dry = cli(db, {"workflows", "cancel", "inbox-1", "--reason", "test", "--dry-run"});
  CHECK(dry.code == 0);
  CHECK(stable(dry.out) ==
        "dry run, nothing written: would have asked run 00000000-0000-0000-0000-000000000000 of 'inbox-1' to cancel\n");
  CHECK(db.count("SELECT count(*) FROM {s}.audit") == 0);

  auto cancel = cli(db, {"--actor", "ops@test", "workflows", "cancel", "inbox-1", "--reason", "customer left"});
  CHECK(cancel.code == 0);
  CHECK(wait_until([&] { return engine.runs().latest("inbox-1").status == WorkflowStatus::cancelled; }));
  CHECK(db.count("SELECT count(*) FROM {s}.audit WHERE actor = 'ops@test' AND reason = 'customer left'") == 1);
  auto again = cli(db, {"workflows", "cancel", "inbox-1", "--reason", "twice", "--json"});
  CHECK(again.json()["changed"] == false);

  auto resume_done = cli(db, {"workflows", "resume", "hello-1", "--reason", "why not"});
  CHECK(resume_done.code == 2);
  CHECK(resume_done.err.find("only a failed or blocked run can be resumed") != std::string::npos);
  CHECK(cli(db, {"workflows", "resume", "failing-1", "--reason", "fixed", "--dry-run"}).code == 0);
  CHECK(engine.runs().latest("failing-1").status == WorkflowStatus::failed);

  auto far = cli(db, {"workflows", "fork", "hello-1", "--from-step", "9", "--reason", "r", "--dry-run"});
  CHECK(far.code == 2);
  CHECK(far.err.find("from step 9: its journal has steps 0 to 0") != std::string::npos);
  auto taken = cli(
      db, {"workflows", "fork", "hello-1", "--from-step", "0", "--new-id", "inbox-1", "--reason", "r", "--dry-run"});
  CHECK(taken.code == 2);
  CHECK(cli(db, {"workflows", "fork", "hello-1", "--from-step", "1", "--new-id", "free", "--reason", "r", "--dry-run"})
            .code == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'free'") == 0);
  auto fork = cli(
      db, {"workflows", "fork", "hello-1", "--from-step", "0", "--new-id", "hello-2", "--reason", "again", "--json"});
  REQUIRE(fork.code == 0);
  CHECK(fork.json()["new_workflow_id"] == "hello-2");
  CHECK(engine.workflow<HelloWorkflow>("hello-2").result(10s) == "hello, ada");

  auto delete_running = cli(db, {"workflows", "delete", "hello-2", "--reason", "x"});
  CHECK((delete_running.code == 0 || delete_running.code == 2));  // it may have completed already
  CHECK(cli(db, {"workflows", "delete", "hello-1", "--reason", "test data", "--dry-run"}).code == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'hello-1'") == 1);
  CHECK(cli(db, {"workflows", "delete", "hello-1", "--reason", "test data"}).code == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'hello-1'") == 0);

  auto audit = cli(db, {"audit", "--json"});
  REQUIRE(audit.code == 0);
  CHECK(audit.json()["entries"].size() >= 3);
  CHECK(audit.json()["entries"][0]["reason"] == "test data");
}

TEST_CASE_METHOD(Fleet, "a running run is not deleted, and terminate ends it at once", "[pg][cli]") {
  auto refused = cli(db, {"workflows", "delete", "inbox-1", "--reason", "x"});
  CHECK(refused.code == 2);
  CHECK(refused.err.find("is running: cancel or terminate it before deleting it") != std::string::npos);
  CHECK(cli(db, {"workflows", "terminate", "inbox-1", "--reason", "stuck"}).code == 0);
  CHECK(engine.runs().latest("inbox-1").status == WorkflowStatus::cancelled);
}

TEST_CASE_METHOD(Fleet, "send puts a message in a run's inbox, once per key", "[pg][cli]") {
  auto sent = cli(db, {"workflows", "send", "inbox-1", "item", "\"parcel\"", "--key", "k1", "--json"});
  REQUIRE(sent.code == 0);
  CHECK_FALSE(sent.json()["message_id"].get<std::string>().empty());
  CHECK(engine.workflow<InboxWorkflow>("inbox-1").result(10s) == std::vector<std::string>{"parcel"});
  auto bad = cli(db, {"workflows", "send", "hello-1", "item", "{not json"});
  CHECK(bad.code == 2);
  CHECK(bad.err.rfind("durable: the payload is not JSON", 0) == 0);
  CHECK(cli(db, {"workflows", "send", "nobody", "item", "1"}).code == 1);
  auto ended = cli(db, {"workflows", "send", "hello-1", "item", "\"late\""});
  CHECK(ended.code == 2);  // WorkflowEnded: input the run's state refuses
  CHECK(ended.err.find("has ended") != std::string::npos);
}

TEST_CASE_METHOD(Fleet, "schedules list, show, pause, resume and delete", "[pg][cli]") {
  engine.schedules().create("nightly", {.workflow = "hello", .input = "night", .cron = "0 2 * * *"});
  auto list = cli(db, {"schedules", "list", "--json"});
  REQUIRE(list.json()["schedules"].size() == 1);
  CHECK(list.json()["schedules"][0]["cron"] == "0 2 * * *");
  CHECK(stable(cli(db, {"schedules", "list"}).out) ==
        "ID       WORKFLOW  CRON       ZONE  NEXT FIRE                 PAUSED  STARTED  DROPPED\n"
        "nightly  hello     0 2 * * *  UTC   2000-01-01T00:00:00.000Z  no      0        0\n");
  CHECK(cli(db, {"schedules", "pause", "nightly"}).code == 2);  // no reason
  CHECK(cli(db, {"schedules", "pause", "nightly", "--reason", " "}).code == 2);
  CHECK_FALSE(engine.schedules().get("nightly").paused);
  CHECK(cli(db, {"schedules", "pause", "nightly", "--reason", "source down"}).code == 0);
  CHECK(engine.schedules().get("nightly").paused);
  CHECK(cli(db, {"schedules", "show", "nightly", "--json"}).json()["paused"] == true);
  CHECK(cli(db, {"schedules", "resume", "nightly", "--reason", "source back"}).code == 0);
  CHECK_FALSE(engine.schedules().get("nightly").paused);
  CHECK(cli(db, {"schedules", "delete", "nightly"}).code == 2);  // no reason
  CHECK(cli(db, {"schedules", "delete", "nightly", "--reason", "r", "--dry-run"}).code == 0);
  CHECK(engine.schedules().list().size() == 1);
  CHECK(cli(db, {"schedules", "delete", "nightly", "--reason", "replaced"}).code == 0);
  CHECK(engine.schedules().list().empty());
  // Each change is in the audit trail, with its reason; the dry run and the refusals are not.
  std::vector<std::string> audited;
  for (const AuditEntry& e : engine.runs().audit()) {
    audited.push_back(e.action + " " + e.details.value("schedule_id", "") + ": " + e.reason);
  }
  CHECK(audited == std::vector<std::string>{"schedule_delete nightly: replaced", "schedule_resume nightly: source back",
                                            "schedule_pause nightly: source down"});
  CHECK(cli(db, {"audit"}).out.find("schedule_delete  schedule nightly  replaced") != std::string::npos);
  auto missing = cli(db, {"schedules", "show", "nightly"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("nightly") != std::string::npos);
}

TEST_CASE_METHOD(Fleet, "queues define, list, show, pause and resume, audited", "[pg][cli][queues]") {
  CHECK(cli(db, {"queues", "list"}).out == "no named queues\n");
  REQUIRE(cli(db, {"queues", "define", "tenants", "--concurrency", "3", "--key-concurrency", "1"}).code == 0);
  StartOptions options;
  options.queue = "tenants";
  options.concurrency_key = "acme";
  engine.start_workflow<HelloWorkflow>("queued-1", "q", options);  // this engine does not serve it: it waits
  auto list = cli(db, {"queues", "list", "--json"});
  REQUIRE(list.json()["queues"].size() == 1);
  const Json q = list.json()["queues"][0];
  CHECK(q["name"] == "tenants");
  CHECK(q["concurrency"] == 3);
  CHECK(q["key_concurrency"] == 1);
  CHECK(q["queued"] == 1);
  CHECK(q["running"] == 0);
  auto show = cli(db, {"queues", "show", "tenants"});
  CHECK(show.out.find(
            "concurrency    3\nper key        1\nrate           none\nkey rate       none\npaused         no\n") !=
        std::string::npos);
  CHECK(show.out.find("acme  1       0") != std::string::npos);
  CHECK(cli(db, {"queues", "define", "tenants", "--concurrency", "0"}).code == 2);  // a limit is at least 1
  CHECK(engine.queues().get("tenants").spec.concurrency == 3);
  CHECK(cli(db, {"queues", "pause", "tenants"}).code == 2);  // no reason
  CHECK(cli(db, {"queues", "pause", "tenants", "--reason", "provider down"}).code == 0);
  CHECK(engine.queues().get("tenants").paused);
  CHECK(cli(db, {"queues", "show", "tenants", "--json"}).json()["paused_reason"] == "provider down");
  CHECK(cli(db, {"queues", "resume", "tenants", "--reason", "provider back"}).code == 0);
  CHECK_FALSE(engine.queues().get("tenants").paused);
  CHECK(cli(db, {"audit"}).out.find("queue_resume  queue tenants  provider back") != std::string::npos);
  auto missing = cli(db, {"queues", "show", "nowhere"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("nowhere") != std::string::npos);
  CHECK(cli(db, {"queues", "pause", "no such queue", "--reason", "r"}).code == 2);
  REQUIRE(cli(db, {"queues", "define", "metered", "--rate", "50/1s", "--key-rate", "5/2m"}).code == 0);
  const Json metered = cli(db, {"queues", "show", "metered", "--json"}).json();
  CHECK(metered["rate"] == Json{{"count", 50}, {"period_ms", 1000}});
  CHECK(metered["key_rate"] == Json{{"count", 5}, {"period_ms", 120000}});
  CHECK(cli(db, {"queues", "show", "metered"}).out.find("rate           50/1.000s\nkey rate       5/2m 0s\n") !=
        std::string::npos);
  auto bad_rate = cli(db, {"queues", "define", "metered", "--rate", "50 a second"});
  CHECK(bad_rate.code == 2);
  CHECK(bad_rate.err.find("COUNT/PERIOD") != std::string::npos);
  CHECK(cli(db, {"queues", "define", "metered", "--rate", "0/1s"}).code == 2);
  REQUIRE(cli(db, {"queues", "define", "weighted", "--key-weight", "gold=3", "--key-weight", "a=b=2"}).code == 0);
  CHECK(cli(db, {"queues", "show", "weighted", "--json"}).json()["key_weights"] == Json{{"a=b", 2}, {"gold", 3}});
  CHECK(cli(db, {"queues", "show", "weighted"}).out.find("key weights    a=b=2, gold=3\n") != std::string::npos);
  auto bad_weight = cli(db, {"queues", "define", "weighted", "--key-weight", "gold"});
  CHECK(bad_weight.code == 2);
  CHECK(bad_weight.err.find("KEY=WEIGHT") != std::string::npos);
  CHECK(cli(db, {"queues", "define", "weighted", "--key-weight", "gold=101"}).code == 2);  // 1 to 100
  CHECK(cli(db, {"queues", "define", "weighted", "--key-weight", "gold=4", "--key-weight", "gold=5"}).code == 2);
  CHECK(engine.queues().get("weighted").spec.key_weights.at("gold") == 3);  // nothing written
  REQUIRE(cli(db, {"queues", "define", "aged", "--priority-aging", "2m"}).code == 0);
  CHECK(cli(db, {"queues", "show", "aged", "--json"}).json()["priority_aging_ms"] == 120000);
  CHECK(cli(db, {"queues", "show", "aged"}).out.find("priority aging +1 priority a 2m 0s waited\n") !=
        std::string::npos);
  CHECK(cli(db, {"queues", "show", "weighted", "--json"}).json()["priority_aging_ms"].is_null());
  auto bad_step = cli(db, {"queues", "define", "aged", "--priority-aging", "soon"});
  CHECK(bad_step.code == 2);
  CHECK(bad_step.err.find("--priority-aging 'soon' is not a period") != std::string::npos);
  auto zero_step = cli(db, {"queues", "define", "aged", "--priority-aging", "0s"});
  CHECK(zero_step.code == 2);
  CHECK(zero_step.err.find("QueueSpec::priority_aging is 0ms") != std::string::npos);
  CHECK(engine.queues().get("aged").spec.priority_aging == Duration{std::chrono::minutes{2}});  // nothing written
}

TEST_CASE_METHOD(Fleet, "queues pause and resume a workflow or an activity type, audited", "[pg][cli][queues]") {
  CHECK(cli(db, {"queues", "pause", "--activity", "charge_card", "--reason", "the card API is down"}).out ==
        "paused activity type 'charge_card'\n");
  const Json listed = cli(db, {"queues", "list", "--json"}).json();
  REQUIRE(listed["paused_types"].size() == 1);
  CHECK(listed["paused_types"][0]["kind"] == "activity");
  CHECK(listed["paused_types"][0]["name"] == "charge_card");
  CHECK(listed["paused_types"][0]["paused_reason"] == "the card API is down");
  CHECK(cli(db, {"queues", "list"}).out.find("activity     charge_card") != std::string::npos);
  CHECK(engine.queues().paused_types().size() == 1);
  CHECK(cli(db, {"queues", "resume", "--activity", "charge_card", "--reason", "back"}).out ==
        "resumed activity type 'charge_card'\n");
  CHECK(cli(db, {"queues", "resume", "--activity", "charge_card", "--reason", "back"}).out ==
        "activity type 'charge_card' was not paused\n");
  CHECK(cli(db, {"queues", "pause", "--workflow", "checkout", "--reason", "bad deploy"}).code == 0);
  CHECK(engine.queues().paused_types().at(0).kind == TypeKind::workflow);
  // One target at a time, and a reason: usage errors, nothing written.
  CHECK(cli(db, {"queues", "pause", "tenants", "--workflow", "checkout", "--reason", "r"}).code == 2);
  CHECK(cli(db, {"queues", "pause", "--reason", "r"}).code == 2);
  CHECK(cli(db, {"queues", "pause", "--workflow", "checkout"}).code == 2);
  CHECK(engine.queues().paused_types().size() == 1);
}

TEST_CASE_METHOD(Fleet, "stats and prune read across the schema", "[pg][cli]") {
  auto stats = cli(db, {"stats", "--json"});
  REQUIRE(stats.code == 0);
  const Json s = stats.json();
  CHECK(s["runs_by_status"]["completed"] == 1);
  CHECK(s["runs_by_status"]["failed"] == 1);
  CHECK(s["runs_by_status"]["running"] == 1);
  CHECK(s["oldest_running"]["workflow_id"] == "inbox-1");
  REQUIRE(s["instances"].size() == 1);
  CHECK(s["instances"][0]["alive"] == true);
  auto text = cli(db, {"stats"});
  CHECK(text.out.find("runs by status\nSTATUS     RUNS\nrunning    1\ncompleted  1\nfailed     1\n") !=
        std::string::npos);

  auto dry = cli(db, {"prune", "--ended-before", "2200-01-01", "--reason", "all", "--dry-run", "--json"});
  REQUIRE(dry.code == 0);
  CHECK(dry.json()["runs"] == 2);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 3);
  CHECK(cli(db, {"prune", "--ended-before", "2200-01-01", "--reason", "all"}).code == 0);
  CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 1);
}

TEST_CASE("bad input gets one line naming what was wrong, and its exit code", "[pg][cli]") {
  TestDb db;
  migrate_schema(db.url(), db.schema());
  auto verb = cli(db, {"workflow"});
  CHECK(verb.code == 2);
  CHECK(verb.err.rfind("durable: unknown verb 'workflow' for 'durable'", 0) == 0);
  auto sub = cli(db, {"workflows", "lsit"});
  CHECK(sub.code == 2);
  CHECK(sub.err.rfind("durable: unknown verb 'lsit' for 'durable workflows': use one of list, show", 0) == 0);
  auto none = cli(db, {"workflows"});
  CHECK(none.code == 2);
  CHECK(none.err.rfind("durable: 'durable workflows' needs a verb: one of list, show", 0) == 0);
  auto date = cli(db, {"workflows", "list", "--since", "yesterday"});
  CHECK(date.code == 2);
  CHECK(date.err.rfind("durable: --since 'yesterday' is not a time", 0) == 0);
  CHECK(cli(db, {"workflows", "list", "--since", "2026-13-01"}).code == 2);
  CHECK(cli(db, {"workflows", "list", "--since", "2999-01-01"}).code == 2);  // past the clock's range
  CHECK(cli(db, {"workflows", "list", "--status", "done"}).code == 2);
  CHECK(cli(db, {"workflows", "list", "--limit", "0"}).code == 2);
  auto unknown = cli(db, {"workflows", "show", "no-such-run"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err == "durable: no workflow with id 'no-such-run'\n");
  auto schema = cli(db, {"--schema", "Bad-Schema", "stats"}, false);
  CHECK(schema.code == 2);
  auto unreachable = cli(db, {"--database-url", "host=127.0.0.1 port=1 dbname=none", "stats"}, false);
  CHECK(unreachable.code == 3);
  CHECK(unreachable.err.find('\n') == unreachable.err.size() - 1);  // one line
  auto exposed = cli(db, {"console", "--listen", "0.0.0.0:0"});
  CHECK(exposed.code == 2);
  CHECK(exposed.err.find("token") != std::string::npos);
  auto help = cli(db, {"workflows", "fork", "--help"});
  CHECK(help.code == 0);
  CHECK(help.out.find("Example:\n  durable workflows fork order-42 --from-step 3") != std::string::npos);
}

TEST_CASE("with --codec-plugin the tool reads what a codec encoded, and without it shows such values marked",
          "[pg][cli][codec]") {
  const auto codec = std::make_shared<XorCodec>(std::map<std::string, std::string>{{"k1", "s3cret"}}, "k1");
  RunningEngine env([&](EngineOptions& o) { o.codec = codec; });
  // A marker no hex run id, base64 ciphertext or JSON escape can contain by chance ('!', '_' and
  // '-' together, upper and lower case), so that finding it, or not, says what it should.
  env.engine.start_workflow<HelloWorkflow>("hello-1", marker).result(10s);
  env.engine.start_workflow<FailingWorkflow>("failing-1", "on purpose");
  REQUIRE(wait_until([&] { return env.engine.runs().latest("failing-1").status == WorkflowStatus::failed; }));
  const std::vector<std::string> plugin{"--codec-plugin", DURABLE_TEST_CODEC_PLUGIN, "--codec-config", "k1=s3cret"};
  auto with_plugin = [&](std::vector<std::string> args) {
    args.insert(args.begin(), plugin.begin(), plugin.end());
    return cli(env.db, args);
  };

  SECTION("without a codec: marked, never the plaintext") {
    auto show = cli(env.db, {"workflows", "show", "hello-1"});
    REQUIRE(show.code == 0);
    CHECK(show.out.find("input         [encoded with key k1]\n") != std::string::npos);
    CHECK(show.out.find("result        [encoded with key k1]\n") != std::string::npos);
    CHECK(show.out.find(marker) == std::string::npos);
    auto failed = cli(env.db, {"workflows", "show", "failing-1"});
    CHECK(failed.out.find("error         ") != std::string::npos);
    CHECK(failed.out.find("[encoded with key k1]\n") != std::string::npos);
    CHECK(failed.out.find("on purpose") == std::string::npos);
    auto json = cli(env.db, {"workflows", "show", "hello-1", "--json"}).json();
    CHECK(json["input"]["$encoded"]["key"] == "k1");  // as stored
    auto history = cli(env.db, {"workflows", "history", "failing-1"});
    CHECK(history.code == 0);
    auto history_json = cli(env.db, {"workflows", "history", "failing-1", "--json"});
    CHECK(history_json.code == 0);
    CHECK(history_json.out.find("$encoded") != std::string::npos);
    CHECK(history_json.out.find("on purpose") == std::string::npos);
    auto exported = cli(env.db, {"workflows", "export", "hello-1"});
    CHECK(exported.out.find(marker) == std::string::npos);
  }
  SECTION("with the services' codec: decoded") {
    auto show = with_plugin({"workflows", "show", "hello-1"});
    REQUIRE(show.code == 0);
    CHECK(show.out.find(fmt::format("input         \"{}\"\n", marker)) != std::string::npos);
    CHECK(show.out.find(fmt::format("result        \"hello, {}\"\n", marker)) != std::string::npos);
    CHECK(show.out.find("encoded") == std::string::npos);
    CHECK(with_plugin({"workflows", "show", "failing-1", "--json"})
              .json()["error_message"]
              .get<std::string>()
              .find("workflow gave up: on purpose") != std::string::npos);
    CHECK(with_plugin({"workflows", "history", "failing-1", "--json"}).out.find("on purpose") != std::string::npos);
    auto exported = with_plugin({"workflows", "export", "hello-1"}).json();
    CHECK(exported.dump().find(fmt::format("hello, {}", marker)) != std::string::npos);
    // And from the environment, as a service's deployment would set it.
    setenv("DURABLE_CODEC_PLUGIN", DURABLE_TEST_CODEC_PLUGIN, 1);
    setenv("DURABLE_CODEC_CONFIG", "k1=s3cret", 1);
    auto from_env = cli(env.db, {"workflows", "show", "hello-1"});
    unsetenv("DURABLE_CODEC_PLUGIN");
    unsetenv("DURABLE_CODEC_CONFIG");
    CHECK(from_env.out.find(fmt::format("result        \"hello, {}\"\n", marker)) != std::string::npos);
  }
  SECTION("a plugin that cannot load, or a codec that does not fit, is a clear error") {
    auto missing = cli(env.db, {"--codec-plugin", "/nonexistent/libcodec.so", "workflows", "show", "hello-1"});
    CHECK(missing.code == 2);
    CHECK(missing.err.rfind("durable: --codec-plugin /nonexistent/libcodec.so: cannot load it", 0) == 0);
    auto refused = cli(env.db, {"--codec-plugin", DURABLE_TEST_CODEC_PLUGIN, "--codec-config", "no-secret", "workflows",
                                "show", "hello-1"});
    CHECK(refused.code == 2);
    CHECK(refused.err.find("its codec refused to start: the test codec's config is KEY=SECRET") != std::string::npos);
    auto none = cli(env.db, {"--codec-plugin", DURABLE_TEST_CODEC_PLUGIN, "workflows", "show", "hello-1"});
    CHECK(none.code == 2);
    CHECK(none.err.find("it made no codec") != std::string::npos);
    auto other_key = cli(env.db, {"--codec-plugin", DURABLE_TEST_CODEC_PLUGIN, "--codec-config", "k2=s3cret",
                                  "workflows", "show", "hello-1"});
    CHECK(other_key.code == 4);
    CHECK(other_key.err.find("'k1'") != std::string::npos);
    CHECK(other_key.out.empty());
    auto wrong_secret = cli(env.db, {"--codec-plugin", DURABLE_TEST_CODEC_PLUGIN, "--codec-config", "k1=guess",
                                     "workflows", "show", "hello-1"});
    CHECK(wrong_secret.code == 4);
    CHECK(wrong_secret.err.find("fails authentication") != std::string::npos);
  }
}

namespace {

// `durable ARGS` left running on the test's schema (the console), with `env` added; its first
// line of output read. Stopped with SIGINT, as an operator stops it, at the end.
struct Serving {
  // The process, stopped however the test ends (a failed REQUIRE in Serving's constructor too).
  struct Child {
    pid_t pid = -1;
    int stop() {
      int status = 0;
      if (pid > 0 && kill(pid, SIGINT) == 0) waitpid(pid, &status, 0);
      pid = -1;
      return status;
    }
    ~Child() { stop(); }
  };
  Serving(const TestDb& db, const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    static int n = 0;
    out_path = fmt::format("/tmp/durable-cli-serving-{}-{}.out", getpid(), n++);
    std::string command = "exec " + quoted(DURABLE_CLI) + " --schema " + quoted(db.schema());
    for (const auto& a : args) command += " " + quoted(a);
    child.pid = spawn_program("/bin/sh", db.url(), {"-c", command + " >" + out_path}, env);
    REQUIRE(wait_until([&] { return slurp(out_path).find('\n') != std::string::npos; }));
    line = slurp(out_path).substr(0, slurp(out_path).find('\n'));
    std::smatch m;
    REQUIRE(std::regex_search(line, m, std::regex(R"(^durable console on http://[^:]+:(\d+)/)")));
    port = std::stoi(m[1]);
  }
  ~Serving() {
    const int status = child.stop();
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    std::remove(out_path.c_str());
  }
  std::string out_path, line;
  Child child;
  int port = 0;
};

}  // namespace

TEST_CASE("durable console takes its token from --token-file or DURABLE_CONSOLE_TOKEN and does not print it",
          "[pg][cli]") {
  RunningEngine env;
  const std::string file = fmt::format("/tmp/durable-cli-token-{}", getpid());
  std::ofstream(file) << "from-a-file\n";
  const auto guarded = [](const Serving& s, const std::string& token) {
    INFO(s.line);
    CHECK(s.line.find(token) == std::string::npos);
    CHECK(s.line.find("#token=") == std::string::npos);
    httplib::Client client("127.0.0.1", s.port);
    CHECK(client.Get("/api/runs")->status == 401);
    CHECK(client.Get("/api/runs", {{"Authorization", "Bearer " + token}})->status == 200);
  };

  SECTION("from a file") {
    guarded(Serving(env.db, {"console", "--listen", "0.0.0.0:0", "--token-file", file}), "from-a-file");
  }
  SECTION("from the environment") {
    guarded(Serving(env.db, {"console", "--listen", "0.0.0.0:0"}, {"DURABLE_CONSOLE_TOKEN=from-the-env"}),
            "from-the-env");
  }
  SECTION("a token made by the console is printed once, to open the page with") {
    Serving s(env.db, {"console", "--listen", "127.0.0.1:0"});
    CHECK(std::regex_search(s.line, std::regex("#token=[0-9a-f]{64}$")));
  }
  SECTION("two ways at once, or an empty or missing file, is a usage error") {
    CHECK(cli(env.db, {"console", "--token-file", file, "--token", "x"}).code == 2);
    std::ofstream(file) << "\n";
    const auto empty = cli(env.db, {"console", "--token-file", file});
    CHECK(empty.code == 2);
    CHECK(empty.err.find("empty") != std::string::npos);
    CHECK(cli(env.db, {"console", "--token-file", file + ".missing"}).code == 2);
    CHECK(cli(env.db, {"console", "--public-origin", "ops.example.com"}).code == 2);
  }
  std::remove(file.c_str());
}

namespace {
// A refusal as the tool must give it: exit 2, one line on stderr, nothing on stdout.
void check_refused(const Outcome& o, const std::string& says) {
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.code == 2);
  CHECK(o.out.empty());
  CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
  CHECK(o.err.find(says) != std::string::npos);
}
}  // namespace

TEST_CASE_METHOD(Fleet, "hostile input is refused in one line with exit 2, and writes nothing", "[pg][cli]") {
  const std::string run = engine.runs().latest("hello-1").run_id.str();
  const auto list = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"workflows", "list"});
    return cli(db, args);
  };
  SECTION("ages and times beyond the clock's range") {
    check_refused(list({"--since", "999999999d"}), "--since '999999999d' reaches before 1970");
    check_refused(list({"--since", "99999999999999d"}), "--since '99999999999999d' is not a time");
    check_refused(cli(db, {"prune", "--ended-before", "999999999d", "--reason", "r"}), "reaches before 1970");
    check_refused(list({"--since", "2026-12-01T08:00+99:99"}), "offset +99:99");
    check_refused(list({"--since", "2026-12-01T08:00-24:00"}), "offset -24:00");
  }
  SECTION("cursors that are too long or beyond the time range") {
    check_refused(list({"--cursor", "9999999999999999999." + run}), "cursor '9999999999999999999.");
    check_refused(list({"--cursor", "9223372036854775807." + run}), "is malformed");
    check_refused(list({"--cursor", "99999999999999999999." + run}), "is malformed");
  }
  SECTION("a fork's step beyond the range of a step number") {
    for (const std::string step : {"4294967297", "4294967296", "-4294967295", "99999999999999999999"}) {
      auto fork = cli(db, {"workflows", "fork", "hello-1", "--from-step", step, "--reason", "r"});
      check_refused(fork, step);
      auto dry = cli(db, {"workflows", "fork", "hello-1", "--from-step", step, "--reason", "r", "--dry-run"});
      check_refused(dry, step);
    }
    CHECK(db.count("SELECT count(*) FROM {s}.workflows") == 3);
  }
  SECTION("ids, reasons and filters that are not UTF-8") {
    check_refused(cli(db, {"workflows", "show", "bad-\xff-id"}), "not valid UTF-8");
    check_refused(cli(db, {"workflows", "cancel", "inbox-1", "--reason", "bad \xc3("}), "not valid UTF-8");
    check_refused(list({"--id-prefix", "\xfe"}), "not valid UTF-8");
    check_refused(list({"--name", "\xfe"}), "not valid UTF-8");
    check_refused(cli(db, {"--actor", "\xff", "workflows", "cancel", "inbox-1", "--reason", "r"}), "not valid UTF-8");
    CHECK(db.count("SELECT count(*) FROM {s}.audit") == 0);
    CHECK(engine.runs().latest("inbox-1").status == WorkflowStatus::running);
  }
  SECTION("a database URL that does not parse, at once and without retrying") {
    for (const std::string url : {"postgresql://%zz@[::1", "host=127.0.0.1 port=1 =oops", "not a url at all"}) {
      const auto start = std::chrono::steady_clock::now();
      auto o = cli(db, {"--database-url", url, "stats"}, false);
      check_refused(o, "the database URL does not parse");
      CHECK(o.err.find(url) == std::string::npos);  // it may hold a password
      CHECK(std::chrono::steady_clock::now() - start < 3s);
      check_refused(cli(db, {"--database-url", url, "migrate", "--check"}, false), "the database URL does not parse");
    }
  }
}

TEST_CASE_METHOD(Fleet, "control characters in ids and reasons are escaped in text output", "[pg][cli]") {
  engine.start_workflow<InboxWorkflow>("evil\n1  forged\x1b[31m", InboxInput{});
  const std::string forged = "x\n999  2000-01-01T00:00:00.000Z  root  cancel  inbox-1  forged";
  REQUIRE(cli(db, {"workflows", "cancel", "inbox-1", "--reason", forged}).code == 0);
  auto audit = cli(db, {"audit"});
  REQUIRE(audit.code == 0);
  CHECK(std::count(audit.out.begin(), audit.out.end(), '\n') == 2);  // the header and one entry
  CHECK(audit.out.find("x\\x0a999") != std::string::npos);
  auto listed = cli(db, {"workflows", "list"});
  CHECK(std::count(listed.out.begin(), listed.out.end(), '\n') == 5);  // the header and four runs
  CHECK(listed.out.find("evil\\x0a1  forged\\x1b[31m") != std::string::npos);
  CHECK(listed.out.find('\x1b') == std::string::npos);
  auto show = cli(db, {"workflows", "show", "evil\n1  forged\x1b[31m"});
  REQUIRE(show.code == 0);
  CHECK(show.out.find("workflow id   evil\\x0a1  forged\\x1b[31m\n") != std::string::npos);
  auto missing = cli(db, {"workflows", "show", "gone\nfake\x1b"});
  CHECK(missing.code == 1);
  CHECK(missing.err == "durable: no workflow with id 'gone\\x0afake\\x1b'\n");
  // As JSON the values are exact: JSON escapes them itself.
  CHECK(cli(db, {"audit", "--json"}).json()["entries"][0]["reason"] == forged);
}

namespace {
// An activity that fails until its cause is fixed, for a run to fail and be resumed.
std::atomic<bool> ledger_open{false};
const ActivityRef<int, int> post{"post"};
const WorkflowRef<int, int> posting{"posting"};
void register_posting(Engine& engine) {
  engine.add_activity(post, [](ActivityContext&, const int& x) {
    if (!ledger_open) throw NonRetryableError("the ledger is closed");
    return x + 1;
  });
  engine.add_workflow(posting, [](WorkflowContext& ctx, const int& x) { return ctx.call(post, x); });
}
}  // namespace

TEST_CASE("workflows resume runs a failed run again from its journal, as a user runs it", "[pg][cli]") {
  ledger_open = false;
  RunningEngine env({}, register_posting);
  auto run = env.engine.start_workflow(posting, "post-1", 41);
  CHECK_THROWS_AS(run.result(10s), WorkflowFailed);
  auto dry = cli(env.db, {"workflows", "resume", "post-1", "--reason", "ledger reopened", "--dry-run"});
  CHECK(dry.code == 0);
  CHECK(env.engine.runs().latest("post-1").status == WorkflowStatus::failed);
  ledger_open = true;
  auto resumed = cli(env.db, {"--actor", "ops@test", "workflows", "resume", "post-1", "--reason", "ledger reopened"});
  REQUIRE(resumed.code == 0);
  CHECK(resumed.out == fmt::format("resumed run {} of 'post-1' (it was failed)\n", run.run_id()));
  CHECK(env.engine.workflow_run(run.run_id()).result_json(10s) == 42);  // the same run, completed
  const auto audit = env.engine.runs().audit();
  REQUIRE(audit.size() == 1);
  CHECK(audit[0].action == "resume");
  CHECK(audit[0].actor == "ops@test");
  CHECK(audit[0].reason == "ledger reopened");
  auto again = cli(env.db, {"workflows", "resume", "post-1", "--reason", "twice"});
  CHECK(again.code == 2);
  CHECK(again.err.find("only a failed or blocked run can be resumed") != std::string::npos);
}

TEST_CASE("expire-idempotency-results forgets old results, audited, and refuses bad input", "[pg][cli]") {
  const WorkflowRef<std::string, std::string> keyed{"keyed"};
  RunningEngine env({}, [&](Engine& e) {
    e.add_workflow(keyed, [](WorkflowContext& ctx, const std::string& s) {
      return ctx.call<EchoActivity>(s, {.idempotency_key = "key-" + s});
    });
  });
  env.engine.start_workflow(keyed, "keyed-1", "old").result(10s);
  env.engine.start_workflow(keyed, "keyed-2", "new").result(10s);
  pqxx::connection conn(env.db.url());
  pqxx::work tx(conn);
  tx.exec(
      fmt::format("UPDATE \"{}\".idempotent_results SET created_at = now() - interval '100 days' "
                  "WHERE workflow_id = 'keyed-1'",
                  env.db.schema()));
  tx.commit();
  auto missing = cli(env.db, {"expire-idempotency-results", "--created-before", "90d"});
  CHECK(missing.code == 2);
  CHECK(missing.err == "durable: --reason is required (see --help)\n");
  check_refused(cli(env.db, {"expire-idempotency-results", "--created-before", "soon", "--reason", "r"}),
                "--created-before 'soon' is not a time");
  auto young = cli(env.db, {"expire-idempotency-results", "--created-before", "200d", "--reason", "r", "--json"});
  REQUIRE(young.code == 0);
  CHECK(young.json()["results"] == 0);
  auto expired = cli(env.db, {"expire-idempotency-results", "--created-before", "90d", "--reason", "retention"});
  REQUIRE(expired.code == 0);
  CHECK(stable(expired.out) == "forgot 1 idempotency result(s) committed before 2000-01-01T00:00:00.000Z\n");
  CHECK(env.db.count("SELECT count(*) FROM {s}.idempotent_results WHERE workflow_id = 'keyed-1'") == 0);
  CHECK(env.db.count("SELECT count(*) FROM {s}.idempotent_results") == 1);
  CHECK(env.engine.runs().audit()[0].action == "expire_idempotency_results");
  CHECK(env.engine.runs().audit()[0].reason == "retention");
}

TEST_CASE_METHOD(Fleet, "through PgBouncer the tool needs --pooler-mode, and with it lists runs", "[pg][cli][pooler]") {
  test_roles_without_jit();
  testing::TemporaryPgBouncer pooler(db.url());
  const std::vector<std::string> through = {"--database-url", pooler.url(), "--schema", db.schema()};
  auto args = [&](std::vector<std::string> more) {
    more.insert(more.begin(), through.begin(), through.end());
    return more;
  };
  auto refused = cli(db, args({"workflows", "list"}), false);
  CHECK(refused.code == 2);
  CHECK(refused.err.find("through a connection pooler") != std::string::npos);
  CHECK(refused.err.find("--pooler-mode") != std::string::npos);
  auto listed = cli(db, args({"--pooler-mode", "--json", "workflows", "list"}), false);
  CHECK(listed.code == 0);
  CHECK(listed.json()["runs"].size() == 3);
}
