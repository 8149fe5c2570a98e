// The web console, end to end: a real engine on a real PostgreSQL schema, the console serving it,
// and Debian's chromium driving the pages (webdriver.hpp). Each test checks the rendered page and
// the database. Screenshots go to DURABLE_BROWSER_ARTIFACTS (docs/console.png is one of them).
#include <httplib.h>

#include <catch2/catch.hpp>
#include <console.hpp>
#include <filesystem>
#include <regex>

#include "browser/webdriver.hpp"
#include "support/test_db.hpp"
#include "support/test_workflows.hpp"
#include "support/xor_codec.hpp"

using namespace std::chrono_literals;
using durable::console::Console;
using durable::console::ConsoleOptions;
using durable::test::Browser;
using durable::test::RunningEngine;
using durable::test::wait_until;
using Json = nlohmann::json;

namespace {

// Fails for good: the boom activity's three attempts all throw.
struct DoomedWorkflow {
  static constexpr auto name = "doomed";
  int operator()(durable::WorkflowContext& ctx, const std::string& why) {
    return ctx.call<durable::test::BoomActivity>(why, {.retry = durable::RetryPolicy{.max_attempts = 3, .base = 20ms}});
  }
};

// Holds an activity slot for `ms` (the stall activity), so the overview has a running task.
struct StallingWorkflow {
  static constexpr auto name = "stalling";
  int operator()(durable::WorkflowContext& ctx, const int& ms) { return ctx.call<durable::test::StallActivity>(ms); }
};

std::string artifact(const std::string& name) {
  std::filesystem::create_directories(DURABLE_BROWSER_ARTIFACTS);
  return std::string(DURABLE_BROWSER_ARTIFACTS) + "/" + name;
}

// An engine with the test workflows (and `codec`, if any), a console on a free loopback port, and
// a browser holding the console's token (from the URL fragment, as `durable console` prints it).
struct ConsoleAndBrowser {
  explicit ConsoleAndBrowser(const std::string& name, std::shared_ptr<const durable::PayloadCodec> codec = nullptr)
      : env(
            [codec](durable::EngineOptions& o) {
              o.instance = "browser";
              o.codec = codec;
            },
            [](durable::Engine& e) { e.add<DoomedWorkflow>().add<StallingWorkflow>(); }),
        console(env.engine, {.listen = "127.0.0.1:0"}),
        browser(artifact(name + "-chromedriver.log")) {
    console.start();
  }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(console.port()); }
  void open(const std::string& route) {
    browser.go(base() + "/#token=" + console.token());
    browser.find("main[data-loaded='runs']");
    if (!route.empty()) {
      browser.go(base() + "/" + route);
      browser.find("main[data-loaded]:not([data-loaded=''])");
    }
  }
  RunningEngine env;
  Console console;
  Browser browser;
};

}  // namespace

TEST_CASE("the runs list filters failed runs, and a failed run shows its attempts and errors", "[browser]") {
  ConsoleAndBrowser t("runs");
  auto& engine = t.env.engine;
  for (const auto* id : {"greet-1", "greet-2"})
    engine.start_workflow<durable::test::HelloWorkflow>(id, "ada").result(10s);
  const auto doomed = engine.start_workflow<DoomedWorkflow>("doomed-1", "disk on fire");
  REQUIRE_THROWS_AS(doomed.result(10s), durable::WorkflowFailed);
  const auto waiting = engine.start_workflow<durable::test::ApprovalWorkflow>("waiting-1", 3'600'000);
  REQUIRE(t.env.db.count("SELECT count(*) FROM {s}.workflows") == 4);

  t.open("");
  auto& b = t.browser;
  b.wait_count("table#runs tbody tr", 4);
  for (const auto* id : {"greet-1", "greet-2", "doomed-1", "waiting-1"}) {
    CHECK(b.find_all("table#runs tr[data-run-id] td.c-id a").size() == 4);
    b.wait_text("table#runs tbody", id);
  }
  CHECK(b.text(b.find("#counts a[data-status='failed'] b")) == "1");
  CHECK(b.text(b.find("#counts a[data-status='completed'] b")) == "2");
  b.screenshot(artifact("runs.png"));

  b.click(b.find("#f-status option[value='failed']"));
  b.click(b.find("#f-apply"));
  b.wait_count("table#runs tbody tr", 1);
  CHECK(b.url().find("status=failed") != std::string::npos);
  CHECK(b.text(b.find("table#runs tbody td.c-id")) == "doomed-1");

  b.click(b.find("table#runs tbody td.c-id a"));
  CHECK(b.wait_text("#run-title", "doomed-1") == "doomed-1");
  CHECK(b.text(b.find("#run-status")) == "failed");
  CHECK(b.text(b.find("#run-id")) == doomed.run_id().str());
  b.wait_text("#run-error", "ActivityFailed");
  // One bar per attempt, all failed, each with its error beside it; the database agrees.
  const auto history = engine.runs().history(doomed.run_id());
  REQUIRE(history.attempts.size() == 3);
  b.wait_count("#timeline tr.attempt.failed rect.bar.failed", 3);
  for (const auto& error : b.find_all("#timeline tr.attempt td.attempt-error")) {
    CHECK(b.text(error).find("boom: disk on fire") != std::string::npos);
  }
  for (const auto& bar : b.find_all("#timeline rect.bar")) CHECK(std::stod(b.attribute(bar, "width")) > 0);
  CHECK(b.find_all("#journal tr.event").size() == history.events.size());
  b.screenshot(artifact("run-failed.png"));
  (void)waiting;
}

TEST_CASE("an operator cancels a waiting run from its page, with a reason the audit trail keeps", "[browser]") {
  ConsoleAndBrowser t("cancel");
  const auto run = t.env.engine.start_workflow<durable::test::ApprovalWorkflow>("order-77", 3'600'000);
  t.open("#/run/" + run.run_id().str());
  auto& b = t.browser;
  CHECK(b.wait_text("#run-status", "running") == "running");

  b.click(b.find("#act-cancel"));
  b.click(b.find("#act-submit"));  // no reason: nothing is sent
  std::this_thread::sleep_for(300ms);
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.audit") == 0);

  b.type(b.find("#act-reason"), "customer called to stop it");
  b.screenshot(artifact("run-cancel.png"));
  b.click(b.find("#act-submit"));
  b.wait_text("#act-message", "Cancel done");
  CHECK(wait_until([&] {
    return t.env.db.count(
               "SELECT count(*) FROM {s}.workflows WHERE workflow_id = 'order-77' AND status = 'cancelled'") == 1;
  }));
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.audit WHERE action = 'cancel' AND actor = 'console' AND "
                       "reason = 'customer called to stop it' AND run_id = '" +
                       run.run_id().str() + "'") == 1);
  b.go(t.base() + "/#/run/" + run.run_id().str());
  CHECK(b.wait_text("#run-status", "cancelled") == "cancelled");
}

TEST_CASE("a workflow id full of markup renders as text and runs nothing", "[browser]") {
  ConsoleAndBrowser t("escaping");
  const std::string id = "<script>alert(1)</script>";
  const std::string input = "<img src=x onerror=window.__xss=1>";
  const auto run = t.env.engine.start_workflow<durable::test::HelloWorkflow>(id, input);
  run.result(10s);

  t.open("");
  auto& b = t.browser;
  CHECK(b.wait_text("table#runs tbody td.c-id", "alert") == id);
  b.go(t.base() + "/#/run/" + run.run_id().str());
  CHECK(b.wait_text("#run-title", "alert") == id);
  b.wait_text("main", "hello, " + input);
  // No element was made from the strings, no script ran, no alert is open.
  CHECK(b.execute("return document.querySelectorAll('main script, main img, #main [onerror]').length;") == 0);
  CHECK(b.execute("return window.__xss === undefined;") == true);
  CHECK_FALSE(b.alert_open());
  b.screenshot(artifact("escaping.png"));
}

TEST_CASE(
    "the overview counts runs by status, a parent links to its children and back, and the schedules page lists "
    "schedules",
    "[browser]") {
  ConsoleAndBrowser t("overview");
  auto& engine = t.env.engine;
  engine.schedules().create("nightly-report",
                            {.workflow = "hello", .input = "night", .cron = "0 2 * * *", .time_zone = "Europe/Paris"});
  for (const auto* id : {"a-1", "a-2", "a-3"}) engine.start_workflow<durable::test::HelloWorkflow>(id, "x").result(10s);
  REQUIRE_THROWS(engine.start_workflow<DoomedWorkflow>("b-1", "no").result(10s));
  engine.start_workflow<StallingWorkflow>("stuck-1", 60'000);
  REQUIRE(wait_until([&] {
    const durable::Stats s = engine.runs().stats();
    return s.activity_queues.size() == 1 && s.activity_queues[0].running == 1;
  }));

  t.open("#/overview");
  auto& b = t.browser;
  CHECK(b.wait_text("#overview-counts a[data-status='completed'] .n", "3") == "3");
  CHECK(b.text(b.find("#overview-counts a[data-status='failed'] .n")) == "1");
  CHECK(b.text(b.find("#overview-schedules .n")) == "1");
  CHECK(b.find_all("#hourly rect.seg.completed").size() == 1);  // all made this hour
  // The queues and engines of Runs::stats: the stall is leased to this engine, the oldest running run.
  CHECK(b.text(b.find("#overview-activity-queues tr[data-activity='stall'] td.c-activity")) == "stall");
  const std::string owner = b.text(b.find("#overview-engines tbody td.c-owner"));
  CHECK(owner.rfind("browser@", 0) == 0);
  CHECK(std::stoi(b.text(b.find("#overview-engines tbody td.c-leased .leased"))) >= 1);
  CHECK(b.text(b.find("#overview-oldest a.run-link")) == "stuck-1");
  b.screenshot(artifact("overview.png"));

  // A parent links to its children, and a child back to its parent.
  const auto parent = engine.start_workflow<durable::test::FanOutWorkflow>("fan", 2);
  REQUIRE(parent.result(10s) == 6);
  b.go(t.base() + "/#/run/" + parent.run_id().str());
  b.wait_count("#children a.run-link", 2);
  b.wait_text("#children", "fan/1");
  b.click(b.find("#children a.run-link"));
  b.wait_text("#run-title", "fan/");
  CHECK(b.text(b.find("#run-facts a.run-link")) == parent.run_id().str());

  b.go(t.base() + "/#/schedules");
  b.wait_text("table#schedules tbody", "nightly-report");
  const std::string row = b.text(b.find("table#schedules tbody tr"));
  CHECK(row.find("0 2 * * *") != std::string::npos);
  CHECK(row.find("Europe/Paris") != std::string::npos);
  CHECK(row.find("hello") != std::string::npos);
}

TEST_CASE("a console with the services' codec shows a run's values and one without marks them encoded and hides them",
          "[browser][codec]") {
  ConsoleAndBrowser t("codec", std::make_shared<durable::test::XorCodec>(
                                   std::map<std::string, std::string>{{"k1", "console secret"}}, "k1"));
  auto& engine = t.env.engine;
  const auto greeted = engine.start_workflow<durable::test::HelloWorkflow>("greet-encoded", "Zanzibar");
  REQUIRE(greeted.result(10s) == "hello, Zanzibar");
  const auto doomed = engine.start_workflow<DoomedWorkflow>("doomed-encoded", "kettle melted");
  REQUIRE_THROWS_AS(doomed.result(10s), durable::WorkflowFailed);
  // The plaintexts the pages must show with the codec and hide without it.
  const std::vector<std::string> secrets{"Zanzibar", "kettle melted"};
  auto& b = t.browser;

  // With the codec: the plaintext, and no marker anywhere.
  t.open("#/run/" + greeted.run_id().str());
  b.wait_text("#run-result", "hello, Zanzibar");
  b.wait_text("#run-input", "\"Zanzibar\"");
  CHECK(b.find_all(".encoded").empty());
  b.go(t.base() + "/#/run/" + doomed.run_id().str());
  b.wait_text("#run-error", "boom: kettle melted");
  b.wait_text("#run-input", "kettle melted");
  b.wait_count("#timeline td.attempt-error", 3);
  for (const auto& error : b.find_all("#timeline td.attempt-error"))
    CHECK_THAT(b.text(error), Catch::Contains("boom: kettle melted"));
  CHECK(b.find_all(".encoded").empty());

  // Without it (an engine on the same schema that only reads): a marker naming the key in place of
  // each value, and neither the plaintext nor the stored data in the page.
  durable::Engine reader(t.env.db.options());
  Console plain(reader, {.listen = "127.0.0.1:0"});
  plain.start();
  const auto visit = [&](const durable::UntypedWorkflowHandle& run) {
    b.go("http://127.0.0.1:" + std::to_string(plain.port()) + "/#/run/" + run.run_id().str());
    b.find("main[data-loaded='run'], main[data-loaded='error']");
    REQUIRE(b.execute("return document.getElementById('error').textContent;") == "");  // the API read the run
    b.wait_text("#run-title", run.id().str());
    const auto html = b.execute("return document.documentElement.outerHTML;").get<std::string>();
    for (const auto& secret : secrets) CHECK_THAT(html, !Catch::Contains(secret));
    const auto stored = t.env.db.query(
        "SELECT x FROM {s}.workflows, LATERAL (VALUES (input->'$encoded'->>'data'), (result->'$encoded'->>'data'), "
        "(split_part(error_message, ':', 3))) v(x) WHERE run_id = '" +
        run.run_id().str() + "' AND x <> ''");
    REQUIRE(stored.size() == 2);  // the input, and the result or the error message
    for (const auto& data : stored) CHECK_THAT(html, !Catch::Contains(data[0].as<std::string>()));
    CHECK(b.text(b.find("#run-input .encoded")) == "encoded · key k1");
    CHECK_THAT(b.attribute(b.find("#run-input .encoded"), "title"), Catch::Contains("--codec-plugin"));
  };
  visit(greeted);
  CHECK(b.text(b.find("#run-result .encoded")) == "encoded · key k1");
  CHECK_FALSE(b.find_all("#journal .encoded[data-key='k1']").empty());  // payloads in the events' data
  visit(doomed);
  CHECK(b.text(b.find("#run-error pre")) == "durable::ActivityFailed: encoded · key k1");
  b.wait_count("#timeline td.attempt-error .encoded[data-key='k1']", 3);
  b.screenshot(artifact("run-encoded.png"));
}

TEST_CASE("the queues page shows each queue's limits and counts and its keys as text, and pauses it with a reason",
          "[browser][queues]") {
  ConsoleAndBrowser t("queues");
  auto& engine = t.env.engine;
  const std::string marked = "<img src=x onerror=window.__xss=1> & \"Tom\"";
  engine.queues().define({.name = "tenants.eu",
                          .concurrency = 4,
                          .key_concurrency = 2,
                          .rate = durable::RateLimit{50, 1s},
                          .key_weights = {{marked, 3}},
                          .priority_aging = 90s});
  engine.queues().pause_activity(marked, {"ana", "an activity type whose name is markup"});
  // The test's engine serves the default queue only, so these runs stay queued.
  durable::StartOptions acme;
  acme.queue = "tenants.eu";
  acme.concurrency_key = "acme";
  durable::StartOptions other = acme;
  other.concurrency_key = marked;
  engine.start_workflow<durable::test::HelloWorkflow>("eu-1", "x", acme);
  engine.start_workflow<durable::test::HelloWorkflow>("eu-2", "x", acme);
  engine.start_workflow<durable::test::HelloWorkflow>("eu-3", "x", other);

  t.open("#/overview");
  auto& b = t.browser;
  CHECK(b.wait_text("#overview-queues .n", "1") == "1");
  b.click(b.find("header nav a[data-page='queues']"));
  b.wait_count("table#queues tbody tr", 1);
  const std::string row = "table#queues tr[data-queue='tenants.eu'] ";
  const auto cell = [&](const std::string& name) { return b.text(b.find(row + "td.c-" + name)); };
  CHECK(cell("name") == "tenants.eu");
  CHECK(cell("concurrency") == "4");
  CHECK(cell("key-concurrency") == "2");
  CHECK(cell("rate") == "50/1s");
  CHECK(cell("key-rate") == "none");
  CHECK(cell("paused") == "no");
  CHECK(cell("queued") == "3");
  CHECK(cell("running") == "0");
  CHECK(cell("throttled") == "0");
  CHECK_THAT(cell("oldest"), Catch::Matches(R"(\d+\.\d s)"));
  b.wait_count("table#paused-types tbody tr", 1);  // the paused types, names as text
  CHECK(b.text(b.find("table#paused-types tbody td.mono")) == marked);
  b.screenshot(artifact("queues.png"));

  // Its page: the keys, the most queued first, each shown as the text it is.
  b.click(b.find(row + "td.c-name a"));
  CHECK(b.wait_text("#queue-title", "tenants.eu") == "tenants.eu");
  b.wait_count("table#queue-keys tbody tr", 2);
  const auto keys = b.find_all("table#queue-keys tbody td.c-key");
  CHECK(b.text(keys.at(0)) == "acme");
  CHECK(b.text(keys.at(1)) == marked);
  const auto queued = b.find_all("table#queue-keys tbody td.c-queued");
  CHECK(b.text(queued.at(0)) == "2");
  CHECK(b.text(queued.at(1)) == "1");
  CHECK(b.text(b.find("#queue-key-weights")) == marked + "=3");
  CHECK(b.text(b.find("#queue-priority-aging")) == "+1 priority a 90s waited");
  CHECK(b.execute("return document.querySelectorAll('main img, main script, main [onerror]').length;") == 0);
  CHECK(b.execute("return window.__xss === undefined;") == true);

  // Paused from the page with a reason, which the audit trail keeps and the page shows as text.
  const std::string reason = "<b>provider</b> down & \"out\"";
  b.click(b.find("#act-pause"));
  b.type(b.find("#act-reason"), reason);
  b.click(b.find("#act-submit"));
  b.wait_text("#act-message", "Pause done");
  CHECK(wait_until([&] { return engine.queues().get("tenants.eu").paused; }));
  CHECK(t.env.db.count("SELECT count(*) FROM {s}.audit WHERE action = 'queue_pause' AND actor = 'console' AND "
                       "details->>'queue' = 'tenants.eu'") == 1);
  CHECK(engine.queues().get("tenants.eu").paused_reason == reason);
  b.wait_text("#queue-paused", reason);
  CHECK(b.find_all("main b").empty());
  b.find("#act-resume");
  b.screenshot(artifact("queue.png"));
  b.go(t.base() + "/#/queues");
  CHECK_THAT(b.wait_text(row + "td.c-paused", "yes"), Catch::Contains(reason));
  CHECK_FALSE(b.alert_open());
}

// ---- without a browser: the HTTP rules ------------------------------------------------------------

namespace {

struct Http {
  explicit Http(const Console& console) : client("127.0.0.1", console.port()) {
    client.set_connection_timeout(5);
    client.set_read_timeout(10);
  }
  std::string csrf() {
    auto page = client.Get("/");
    REQUIRE(page);
    std::smatch m;
    REQUIRE(std::regex_search(page->body, m, std::regex(R"re(name="durable-csrf" content="([0-9a-f]+)")re")));
    return m[1];
  }
  httplib::Result cancel(const durable::RunId& run_id, const httplib::Headers& headers,
                         const std::string& reason = "test") {
    return client.Post("/api/actions/cancel", headers, Json{{"run_id", run_id}, {"reason", reason}}.dump(),
                       "application/json");
  }
  httplib::Client client;
};

std::string error_of(const httplib::Result& res) { return Json::parse(res->body).at("error").get<std::string>(); }

}  // namespace

TEST_CASE("an action needs the token and the console's own page, and a read-only console refuses it", "[browser]") {
  RunningEngine env;
  const auto run = env.engine.start_workflow<durable::test::ApprovalWorkflow>("guarded", 3'600'000);
  const auto audited = [&] { return env.db.count("SELECT count(*) FROM {s}.audit"); };

  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});
  console.start();
  Http http(console);
  const std::string csrf = http.csrf();
  const httplib::Headers good{{"Authorization", "Bearer s3cret"}, {"X-Durable-CSRF", csrf}};

  auto res = http.cancel(run.run_id(), {{"X-Durable-CSRF", csrf}});
  CHECK(res->status == 401);
  CHECK(error_of(res).find("token") != std::string::npos);
  CHECK(http.cancel(run.run_id(), {{"Authorization", "Bearer wrong"}, {"X-Durable-CSRF", csrf}})->status == 401);
  CHECK(http.cancel(run.run_id(), {{"Authorization", "Bearer s3cret"}})->status == 403);  // no CSRF token
  CHECK(http.cancel(run.run_id(), {{"Authorization", "Bearer s3cret"}, {"X-Durable-CSRF", "0000"}})->status == 403);
  auto cross = good;
  cross.emplace("Origin", "http://evil.example");
  CHECK(http.cancel(run.run_id(), cross)->status == 403);
  cross = good;
  cross.emplace("Sec-Fetch-Site", "cross-site");
  CHECK(http.cancel(run.run_id(), cross)->status == 403);
  res = http.cancel(run.run_id(), good, "  ");
  CHECK(res->status == 400);
  CHECK(error_of(res).find("reason") != std::string::npos);
  // A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) reads nothing.
  CHECK(http.client.Get("/api/runs", {{"Host", "evil.example:" + std::to_string(console.port())}})->status == 403);
  CHECK(audited() == 0);
  CHECK(run.status() == durable::WorkflowStatus::running);

  // Errors of the management API come back as JSON, with their HTTP status.
  res = http.client.Get("/api/run?id=01890000-0000-7000-8000-000000000000");
  CHECK(res->status == 404);
  CHECK_FALSE(error_of(res).empty());
  CHECK(http.client.Get("/api/runs?status=sleeping")->status == 400);
  CHECK(http.client.Get("/no/such/page")->status == 404);
  // Every response forbids inline script and framing.
  for (const auto* path : {"/", "/assets/console.js", "/api/runs", "/no/such/page"}) {
    res = http.client.Get(path);
    INFO(path);
    CHECK(res->get_header_value("Content-Security-Policy").find("script-src 'self'") != std::string::npos);
    CHECK(res->get_header_value("Content-Security-Policy").find("frame-ancestors 'none'") != std::string::npos);
    CHECK(res->get_header_value("X-Content-Type-Options") == "nosniff");
    CHECK(res->get_header_value("Referrer-Policy") == "no-referrer");
  }

  SECTION("a read-only console refuses even a good request") {
    Console read_only(env.engine, {.listen = "127.0.0.1:0", .read_only = true, .token = "s3cret"});
    read_only.start();
    Http ro(read_only);
    res = ro.cancel(run.run_id(), {{"Authorization", "Bearer s3cret"}, {"X-Durable-CSRF", ro.csrf()}});
    CHECK(res->status == 403);
    CHECK(error_of(res).find("read-only") != std::string::npos);
    CHECK(ro.client.Get("/api/runs")->status == 200);
    CHECK(audited() == 0);
    CHECK(run.status() == durable::WorkflowStatus::running);
  }
  SECTION("the same request with the token and the page's CSRF token goes through") {
    res = http.cancel(run.run_id(), good);
    CHECK(res->status == 200);
    CHECK(Json::parse(res->body).at("changed") == true);
    CHECK(audited() == 1);
    CHECK(wait_until([&] { return run.status() == durable::WorkflowStatus::cancelled; }));
  }
  SECTION("a fork starts a new run under the id asked for; a resume of a running run is refused") {
    const Json fork{{"run_id", run.run_id()}, {"reason", "try again"}, {"from_step", 0}, {"workflow_id", "guarded-2"}};
    res = http.client.Post("/api/actions/fork", good, fork.dump(), "application/json");
    REQUIRE(res->status == 200);
    const auto forked = Json::parse(res->body).at("run_id").get<durable::RunId>();
    CHECK(env.engine.runs().get(forked).forked_from_run == run.run_id());
    CHECK(env.db.count("SELECT count(*) FROM {s}.audit WHERE action = 'fork' AND reason = 'try again'") == 1);
    res = http.client.Post("/api/actions/resume", good, Json{{"run_id", run.run_id()}, {"reason", "go"}}.dump(),
                           "application/json");
    CHECK(res->status == 400);
    CHECK_FALSE(error_of(res).empty());
  }
}

TEST_CASE("the console listens on loopback unless given a token, which then guards reads too", "[browser]") {
  RunningEngine env;
  for (const auto* bad :
       {"nonsense", "127.0.0.1", ":8233", "127.0.0.1:99999", "127.0.0.1:80a", "::1:8233", "[::1]8233"}) {
    INFO(bad);
    CHECK_THROWS_AS(Console(env.engine, {.listen = bad}), durable::InvalidOptions);
  }
  CHECK_THROWS_AS(Console(env.engine, {.listen = "0.0.0.0:0"}), durable::InvalidOptions);
  CHECK_THROWS_AS(Console(env.engine, {.listen = "example.com:8233"}), durable::InvalidOptions);
  Console a(env.engine, {.listen = "127.0.0.1:0"}), b(env.engine, {.listen = "localhost:0"});
  CHECK(std::regex_match(a.token(), std::regex("[0-9a-f]{64}")));
  CHECK(a.token() != b.token());

  Console open(env.engine, {.listen = "0.0.0.0:0", .token = "wide-open-no-more"});
  open.start();
  Http http(open);
  CHECK(http.client.Get("/api/runs")->status == 401);
  CHECK(http.client.Get("/api/runs", {{"Authorization", "Bearer wide-open-no-more"}})->status == 200);
  CHECK(http.client.Get("/")->status == 200);  // the page itself holds no data
}
