// The console's queues (GET /api/queues, GET /api/queues/NAME, POST /api/actions/pause-queue and
// resume-queue): the named queues as Engine::queues() reads them, bad and unknown names as typed
// JSON errors, and pause and resume audited with the console's actor. Requests go through
// Console::answer, the router a connection uses, byte for byte as given.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <console.hpp>
#include <regex>
#include <set>

#include "support/test_db.hpp"
#include "support/test_workflows.hpp"

using namespace std::chrono_literals;
using durable::console::Console;
using Json = nlohmann::json;

namespace console_queues_test {

struct Reply {
  int status = 0;  // 0: no answer
  Json body;       // discarded when the body is not JSON
};

Reply ask(Console& console, const std::string& request) {
  const std::string out = console.answer(request);
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(^HTTP/1\.1 (\d{3}) )"))) return {};
  const auto split = out.find("\r\n\r\n");
  return {std::stoi(m[1]), Json::parse(split == std::string::npos ? "" : out.substr(split + 4), nullptr, false)};
}

// Console::answer serves without a socket, so the console's port is 0.
Reply read_api(Console& console, const std::string& target) {
  return ask(console, "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n");
}

std::string page_csrf(Console& console) {
  const std::string page = console.answer("GET / HTTP/1.1\r\nHost: 127.0.0.1:0\r\n\r\n");
  std::smatch m;
  REQUIRE(std::regex_search(page, m, std::regex(R"re(name="durable-csrf" content="([0-9a-f]+)")re")));
  return m[1];
}

// An action as the console's page sends it; `headers` replaces the token and CSRF lines when given.
Reply queue_action(Console& console, const std::string& verb, const std::string& body, std::string headers = "") {
  if (headers.empty()) headers = "Authorization: Bearer s3cret\r\nX-Durable-CSRF: " + page_csrf(console) + "\r\n";
  return ask(console, "POST /api/actions/" + verb + " HTTP/1.1\r\nHost: 127.0.0.1:0\r\n" + headers +
                          "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\n\r\n" + body);
}

bool json_error(const Reply& r) {
  return r.body.is_object() && r.body.contains("error") && r.body["error"].is_string() &&
         r.body["error"].get<std::string>().find('\n') == std::string::npos;
}

durable::StartOptions on_queue(const std::string& queue, const std::string& key) {
  durable::StartOptions options;
  options.queue = queue;
  options.concurrency_key = key;
  return options;
}

// Runs of `queue` under `key` that stay queued: the test's engine serves only the default queue.
void enqueue(durable::Engine& engine, const std::string& queue, const std::string& key, int n) {
  static int started = 0;
  for (int i = 0; i < n; ++i) {
    engine.start_workflow<durable::test::HelloWorkflow>("q-" + std::to_string(++started), "x", on_queue(queue, key));
  }
}

long long audited(const durable::test::TestDb& db, const std::string& action, const std::string& reason) {
  return db.count("SELECT count(*) FROM {s}.audit WHERE action = '" + action + "' AND actor = 'ops-console' AND " +
                  "reason = '" + reason + "' AND details->>'queue' = 'tenants'");
}

}  // namespace console_queues_test

using namespace console_queues_test;

TEST_CASE("the console lists the named queues with their limits, pause and counts as the CLI's JSON does",
          "[pg][console][queues]") {
  durable::test::RunningEngine env;
  auto& queues = env.engine.queues();
  queues.define({.name = "tenants", .concurrency = 4, .key_concurrency = 2, .rate = durable::RateLimit{50, 1s}});
  queues.define({.name = "bare"});
  enqueue(env.engine, "tenants", "a", 2);
  enqueue(env.engine, "tenants", "b", 1);
  Console console(env.engine, {.listen = "127.0.0.1:0"});

  const Reply all = read_api(console, "/api/queues");
  REQUIRE(all.status == 200);
  const Json& list = all.body.at("queues");
  REQUIRE(list.size() == 2);
  CHECK(list[0].at("name") == "bare");
  CHECK(list[0].at("concurrency").is_null());
  CHECK(list[0].at("rate").is_null());
  const Json& t = list[1];
  std::set<std::string> fields;
  for (const auto& [field, value] : t.items()) fields.insert(field);
  // The fields of `durable queues list --json` (tools/durable/views.cpp), times in milliseconds.
  CHECK(t.at("key_weights") == Json::object());
  CHECK(fields == std::set<std::string>{"name", "concurrency", "key_concurrency", "rate", "key_rate", "key_weights",
                                        "priority_aging_ms", "paused", "paused_at", "paused_by", "paused_reason",
                                        "queued", "running", "throttled", "oldest_queued_seconds", "activities_waiting",
                                        "activities_running"});
  CHECK(t.at("name") == "tenants");
  CHECK(t.at("concurrency") == 4);
  CHECK(t.at("key_concurrency") == 2);
  CHECK(t.at("rate") == Json{{"count", 50}, {"period_ms", 1000}});
  CHECK(t.at("key_rate").is_null());
  CHECK(t.at("paused") == false);
  CHECK(t.at("paused_at").is_null());
  CHECK(t.at("queued") == 3);
  CHECK(t.at("running") == 0);
  CHECK(t.at("throttled") == 0);
  CHECK(t.at("oldest_queued_seconds").get<double>() >= 0);
  CHECK(t.at("activities_waiting") == 0);
  CHECK(t.at("activities_running") == 0);
  CHECK(all.body.at("paused_types") == Json::array());

  // A paused type is listed below the queues, its time in milliseconds.
  queues.pause_activity("charge_card", {"oncall", "the card API is failing"});
  const Json paused = read_api(console, "/api/queues").body.at("paused_types");
  REQUIRE(paused.size() == 1);
  CHECK(paused[0].at("kind") == "activity");
  CHECK(paused[0].at("name") == "charge_card");
  CHECK(paused[0].at("paused_by") == "oncall");
  CHECK(paused[0].at("paused_reason") == "the card API is failing");
  CHECK(paused[0].at("paused_at").is_number_integer());

  // The overview counts them.
  const Reply overview = read_api(console, "/api/overview");
  REQUIRE(overview.status == 200);
  CHECK(overview.body.at("queues") == 2);
}

TEST_CASE("a queue's page gives the queue and its keys with the most queued runs, twenty at most",
          "[pg][console][queues]") {
  durable::test::RunningEngine env;
  env.engine.queues().define({.name = "tenants", .key_concurrency = 1});
  const std::string marked = "<b>\"Tom & Jerry\"</b>";
  enqueue(env.engine, "tenants", marked, 3);
  enqueue(env.engine, "tenants", "", 2);
  for (int k = 0; k < 20; ++k) enqueue(env.engine, "tenants", "k" + std::to_string(k), 1);
  Console console(env.engine, {.listen = "127.0.0.1:0"});

  const Reply one = read_api(console, "/api/queues/tenants");
  REQUIRE(one.status == 200);
  CHECK(one.body.at("name") == "tenants");
  CHECK(one.body.at("key_concurrency") == 1);
  CHECK(one.body.at("queued") == 25);
  const Json& keys = one.body.at("keys");
  REQUIRE(keys.size() == 20);
  CHECK(keys[0] == Json{{"key", marked},
                        {"queued", 3},
                        {"running", 0},
                        {"oldest_queued_seconds", keys[0].at("oldest_queued_seconds")}});
  CHECK(keys[1].at("key") == "");  // the runs started without a key
  CHECK(keys[1].at("queued") == 2);
  CHECK(keys[19].at("queued") == 1);
  // The same keys the management API gives.
  const auto api = env.engine.queues().keys("tenants", 20);
  for (std::size_t i = 0; i < api.size(); ++i) CHECK(keys[i].at("key") == api[i].key);
}

TEST_CASE("an unknown queue is a 404 and a name that is none a 400, each a one-line JSON error",
          "[pg][console][queues]") {
  durable::test::RunningEngine env;
  env.engine.queues().define({.name = "tenants"});
  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret"});

  const Reply unknown = read_api(console, "/api/queues/nope");
  CHECK(unknown.status == 404);
  CHECK(json_error(unknown));
  for (const std::string& target : std::vector<std::string>{
           "/api/queues/", "/api/queues/default", "/api/queues/a%20b", "/api/queues/%FF%FE", "/api/queues/a%00b",
           "/api/queues/ab%C3", "/api/queues/a/b", "/api/queues/a%2Fb", "/api/queues/%3Cscript%3E", "/api/queues/a%0Ab",
           "/api/queues/" + std::string(64, 'q'), "/api/queues/" + std::string(4000, '%')}) {
    INFO(target);
    const Reply r = read_api(console, target);
    CHECK(r.status == 400);
    CHECK(json_error(r));
  }
  // Every byte as a one-character name: a name character is an unknown queue, anything else no name.
  for (int byte = 0; byte < 256; ++byte) {
    const char c = static_cast<char>(byte);
    const bool name_char = std::isalnum(byte) || c == '_' || c == '.' || c == ':' || c == '-';
    INFO(byte);
    const Reply r = read_api(console, fmt::format("/api/queues/%{:02X}", byte));
    CHECK(r.status == (name_char ? 404 : 400));
    CHECK(json_error(r));
  }
  // The actions answer the same.
  CHECK(queue_action(console, "pause-queue", R"({"queue": "nope", "reason": "r"})").status == 404);
  for (const std::string body : {R"({"queue": "default", "reason": "r"})", R"({"queue": "a b", "reason": "r"})",
                                 R"({"queue": "", "reason": "r"})", R"({"queue": 7, "reason": "r"})",
                                 R"({"reason": "r"})", "[]", "{\"queue\": \"\xff\", \"reason\": \"r\"}"}) {
    INFO(body);
    const Reply r = queue_action(console, "resume-queue", body);
    CHECK(r.status == 400);
    CHECK(json_error(r));
  }
  CHECK(env.db.count("SELECT count(*) FROM {s}.audit") == 0);
  CHECK(read_api(console, "/api/queues/tenants").status == 200);  // and it serves on
}

TEST_CASE("an operator pauses and resumes a queue from the console, audited with the console's actor and reason",
          "[pg][console][queues]") {
  durable::test::RunningEngine env;
  env.engine.queues().define({.name = "tenants", .concurrency = 2});
  Console console(env.engine, {.listen = "127.0.0.1:0", .token = "s3cret", .actor = "ops-console"});
  const std::string pause = R"({"queue": "tenants", "reason": "provider down"})";

  // Refused: no token, no CSRF token, no reason; nothing is written.
  CHECK(queue_action(console, "pause-queue", pause, "X-Durable-CSRF: " + page_csrf(console) + "\r\n").status == 401);
  CHECK(queue_action(console, "pause-queue", pause, "Authorization: Bearer s3cret\r\n").status == 403);
  for (const std::string body : {R"({"queue": "tenants", "reason": " \n "})", R"({"queue": "tenants"})"}) {
    const Reply r = queue_action(console, "pause-queue", body);
    CHECK(r.status == 400);
    CHECK(json_error(r));
  }
  CHECK_FALSE(env.engine.queues().get("tenants").paused);
  CHECK(env.db.count("SELECT count(*) FROM {s}.audit") == 0);

  const Reply paused = queue_action(console, "pause-queue", pause);
  REQUIRE(paused.status == 200);
  CHECK(paused.body == Json{{"queue", "tenants"}, {"paused", true}});
  CHECK(audited(env.db, "queue_pause", "provider down") == 1);
  const Reply read = read_api(console, "/api/queues/tenants");
  CHECK(read.body.at("paused") == true);
  CHECK(read.body.at("paused_by") == "ops-console");
  CHECK(read.body.at("paused_reason") == "provider down");
  CHECK(read.body.at("paused_at").is_number_integer());

  const Reply resumed = queue_action(console, "resume-queue", R"({"queue": "tenants", "reason": "provider back"})");
  REQUIRE(resumed.status == 200);
  CHECK(resumed.body == Json{{"queue", "tenants"}, {"paused", false}});
  CHECK(audited(env.db, "queue_resume", "provider back") == 1);
  CHECK_FALSE(env.engine.queues().get("tenants").paused);

  SECTION("a read-only console refuses both") {
    Console read_only(env.engine, {.listen = "127.0.0.1:0", .read_only = true, .token = "s3cret"});
    CHECK(queue_action(read_only, "pause-queue", pause).status == 403);
    CHECK_FALSE(env.engine.queues().get("tenants").paused);
    CHECK(read_api(read_only, "/api/queues").status == 200);
  }
}
