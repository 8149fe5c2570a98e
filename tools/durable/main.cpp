// `durable`: the operator's command-line tool. Every verb goes through durable's public API (the
// management API of durable/runs.hpp, schedules, stats, the schema functions), so what it does a
// program can do too. Exit codes: 0 ok, 1 not found, 2 usage or input refused, 3 database
// unreachable or refusing, 4 anything else.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <durable/durable.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "codec_plugin.hpp"
#include "console/console.hpp"
#include "text.hpp"
#include "views.hpp"

namespace durable::cli {
namespace {

enum Exit { ok = 0, not_found = 1, usage = 2, database = 3, other = 4 };

// A verb's own "not found" (a run id of another workflow, a schema behind this build).
struct NotFound : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Globals {
  std::string database_url, schema = "durable", actor, codec_plugin, codec_config;
  bool json = false;
};

void check_database_url(const std::string& url) {
  const char* env = std::getenv("DURABLE_DATABASE_URL");
  if (url.empty() && !(env && *env)) {
    throw InvalidArgument(
        "no database: pass --database-url (a libpq URI such as postgresql://user@host/app) or set "
        "DURABLE_DATABASE_URL");
  }
}

class Tool {
 public:
  explicit Tool(Globals& g) : g_(g) {}

  Engine& engine() {
    if (!engine_) {
      check_database_url(g_.database_url);
      EngineOptions o;
      o.database_url = g_.database_url;
      o.schema = g_.schema;
      o.instance = "durable-cli";
      o.connection_pool_size = 2;
      o.migrate_schema = false;  // only `durable migrate` migrates
      o.database_unavailable_after = std::chrono::seconds{5};
      if (!g_.codec_plugin.empty()) o.codec = load_codec_plugin(g_.codec_plugin, g_.codec_config);
      engine_ = std::make_unique<Engine>(o);
    }
    return *engine_;
  }
  Runs& runs() { return engine().runs(); }

  // The latest run of `workflow_id`, or its run `run_id` (which must be of that id).
  RunInfo run_of(const std::string& workflow_id, const std::string& run_id) {
    if (run_id.empty()) return runs().latest(workflow_id);
    RunInfo run = runs().get(run_id);
    if (run.workflow_id != workflow_id) {
      throw NotFound(
          fmt::format("run {} is not a run of workflow '{}' (it is of '{}')", run_id, workflow_id, run.workflow_id));
    }
    return run;
  }

  OperatorAction action(const std::string& reason) const { return {g_.actor, reason}; }

  // Prints `doc` under --json, else `human`.
  void print(const Json& doc, const std::string& human) const { std::cout << (g_.json ? doc.dump(2) + "\n" : human); }
  bool json() const { return g_.json; }

 private:
  Globals& g_;
  std::unique_ptr<Engine> engine_;
};

std::string default_actor() {
  const char* user = std::getenv("USER");
  if (!user || !*user) user = std::getenv("LOGNAME");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return fmt::format("{}@{}", user && *user ? user : "unknown", host);
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string status_text(const RunSummary& r) {
  return std::string(to_string(r.status)) + (r.blocked ? ", blocked" : "");
}

// "1 event", "3 events".
std::string count_of(std::int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// --- workflows -----------------------------------------------------------------------------------

struct ListArgs {
  std::vector<std::string> statuses;
  std::string name, id_prefix, since, until, app_version, cursor;
  bool blocked = false, app_version_given = false;
  int limit = 50;
};

void list_runs(Tool& tool, const ListArgs& a) {
  RunQuery q;
  const TimePoint now = std::chrono::system_clock::now();
  for (const auto& s : a.statuses) q.filter.statuses.push_back(parse_status(s));
  q.filter.workflow_name = a.name;
  q.filter.id_prefix = a.id_prefix;
  if (!a.since.empty()) q.filter.created_from = parse_time(a.since, "--since", now);
  if (!a.until.empty()) q.filter.created_until = parse_time(a.until, "--until", now);
  if (a.app_version_given) q.filter.app_version = a.app_version;
  q.filter.blocked_only = a.blocked;
  q.limit = a.limit;
  q.cursor = a.cursor;
  const RunPage page = tool.runs().list(q);
  Json runs = Json::array();
  Table table({"WORKFLOW ID", "NAME", "STATUS", "STARTED BY", "CREATED", "ENDED", "APP VERSION", "RUN ID"});
  for (const auto& r : page.runs) {
    runs.push_back(to_json(r));
    table.add({r.workflow_id, r.workflow_name, status_text(r), std::string(to_string(r.started_by)),
               iso_time(r.created_at), or_dash(iso_time(r.ended_at)), or_dash(r.app_version), r.run_id});
  }
  std::string human = page.runs.empty() ? "no runs match\n" : table.str();
  if (!page.next_cursor.empty()) human += fmt::format("more: --cursor {}\n", page.next_cursor);
  tool.print({{"runs", runs}, {"next_cursor", page.next_cursor}}, human);
}

void show_run(Tool& tool, const std::string& id, const std::string& run_id) {
  const RunInfo r = tool.run_of(id, run_id);
  std::string h =
      fmt::format("workflow id   {}\nrun id        {}{}\nworkflow      {}\nstatus        {}\n", escaped(r.workflow_id),
                  r.run_id, r.latest ? " (latest)" : "", escaped(r.workflow_name), status_text(r));
  h += fmt::format("started by    {}{}\ncreated       {}\n", to_string(r.started_by),
                   r.origin.empty() ? "" : " " + escaped(r.origin), iso_time(r.created_at));
  if (r.ended_at)
    h += fmt::format("ended         {} (after {})\n", iso_time(r.ended_at), span(*r.ended_at - r.created_at));
  if (!r.app_version.empty()) h += fmt::format("app version   {}\n", escaped(r.app_version));
  h += fmt::format("journal       {} events, {} activities, {} attempts ({} failed)\n", r.journal_length, r.activities,
                   r.attempts, r.failed_attempts);
  auto link = [&](const char* label, const std::string& value) {
    if (!value.empty()) h += fmt::format("{:<14}{}\n", label, escaped(value));
  };
  link("parent run", r.parent_run_id);
  link("forked from",
       r.forked_from_run.empty() ? "" : fmt::format("{} at step {}", r.forked_from_run, r.forked_from_step));
  link("continued from", r.continued_from_run);
  link("continued as", r.continued_as_run);
  if (r.blocked_by) {
    h += fmt::format("blocked       since {} by app version {} ({}): {}\n", iso_time(r.blocked_at),
                     escaped(or_dash(r.blocked_by->app_version)), count_of(r.blocked_by->times, "time", "times"),
                     shown_text(r.blocked_by->divergence.message));
  }
  h += fmt::format("input         {}\n", shown(r.input));
  if (r.status == WorkflowStatus::completed) h += fmt::format("result        {}\n", shown(r.result));
  if (!r.error_type.empty() || !r.error_message.empty()) {
    h += fmt::format("error         {}: {}\n", escaped(r.error_type), shown_text(r.error_message));
  }
  tool.print(to_json(r), h);
}

void show_history(Tool& tool, const std::string& id, const std::string& run_id) {
  const RunInfo r = tool.run_of(id, run_id);
  History all;
  for (std::optional<int> from = 0; from;) {
    History page = tool.runs().history(r.run_id, {.from_seq = *from, .limit = 1000});
    all.events.insert(all.events.end(), page.events.begin(), page.events.end());
    all.attempts.insert(all.attempts.end(), page.attempts.begin(), page.attempts.end());
    from = page.next_seq;
  }
  Json events = Json::array(), attempts = Json::array();
  Table timeline({"SEQ", "AT", "+", "EVENT", "STEP", "NAME"});
  for (const auto& e : all.events) {
    events.push_back(to_json(e));
    timeline.add({std::to_string(e.seq), iso_time(e.at), span(e.at - r.created_at), e.kind,
                  e.step < 0 ? "-" : std::to_string(e.step), or_dash(e.name)});
  }
  const TimePoint now = std::chrono::system_clock::now();
  Table tries({"STEP", "ACTIVITY", "ATTEMPT", "STARTED", "DURATION", "OUTCOME", "ERROR"});
  for (const auto& a : all.attempts) {
    attempts.push_back(to_json(a));
    const std::string took = a.started_at ? span(a.ended_at.value_or(now) - *a.started_at) : "-";
    tries.add({std::to_string(a.step), a.activity, std::to_string(a.attempt), or_dash(iso_time(a.started_at)), took,
               a.outcome, a.error_type.empty() ? "" : a.error_type + ": " + shown_text(a.error_message)});
  }
  std::string h =
      fmt::format("run {} of '{}' ({})\n\n", r.run_id, escaped(r.workflow_id), status_text(r)) + timeline.str();
  if (!all.attempts.empty()) h += "\nattempts\n" + tries.str();
  tool.print({{"run", to_json(static_cast<const RunSummary&>(r))}, {"events", events}, {"attempts", attempts}}, h);
}

// An action on a run: checks it as a dry run, or does it; prints what happened.
struct ActionArgs {
  std::string id, run, reason, new_id, from_step_text;
  std::int64_t from_step = -1;
  bool dry_run = false;
};

// What a fork would refuse, for a dry run: a step outside the journal, or a workflow id whose
// latest run is running (for a new id: any run).
void check_fork(Tool& tool, const RunInfo& r, const ActionArgs& a) {
  int steps = 0;
  for (std::optional<int> from = 0; from;) {
    const History page = tool.runs().history(r.run_id, {.from_seq = *from, .limit = 1000});
    for (const auto& e : page.events) steps = std::max(steps, e.step + 1);
    from = page.next_seq;
  }
  if (a.from_step < 0 || a.from_step > steps) {
    throw InvalidArgument(
        fmt::format("cannot fork run {} from step {}: its journal has steps 0 to {}; give 0 (start "
                    "over) to {} (after its last step)",
                    r.run_id, a.from_step, steps - 1, steps));
  }
  const std::string id = a.new_id.empty() ? r.workflow_id : a.new_id;
  try {
    const RunInfo latest = tool.runs().latest(id);
    if (!a.new_id.empty() || latest.status == WorkflowStatus::running) {
      throw WorkflowAlreadyStarted(id, latest.run_id, std::string(to_string(latest.status)));
    }
  } catch (const WorkflowNotFound&) {  // a new id that is free
  }
}

// A step number as typed: the API checks its range and names it; a number no int64 holds is named
// here (CLI11 would clamp it to the largest, a silent wrong answer).
std::int64_t parse_step(const std::string& text) {
  std::int64_t step = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), step);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    throw InvalidArgument(fmt::format(
        "--from-step '{}' is not a step number: give 0 (start over) up to the number of steps the run journaled",
        escaped(text)));
  }
  return step;
}

void act(Tool& tool, const std::string& verb, ActionArgs a) {
  if (verb == "fork") a.from_step = parse_step(a.from_step_text);
  const RunInfo r = tool.run_of(a.id, a.run);
  const OperatorAction action = tool.action(a.reason);
  const bool running = r.status == WorkflowStatus::running;
  Json doc{{"action", verb}, {"workflow_id", r.workflow_id}, {"run_id", r.run_id}, {"dry_run", a.dry_run}};
  std::string what;
  if (verb == "cancel" || verb == "terminate") {
    bool done = running;
    if (!a.dry_run)
      done = verb == "cancel" ? tool.runs().cancel(r.run_id, action) : tool.runs().terminate(r.run_id, action);
    doc["changed"] = done;
    if (!done) {  // nothing to do is an answer, not an error
      tool.print(doc, fmt::format("run {} of '{}' had ended ({}): nothing to {}\n", r.run_id, escaped(r.workflow_id),
                                  to_string(r.status), verb));
      return;
    }
    what = verb == "cancel" ? fmt::format("asked run {} of '{}' to cancel", r.run_id, r.workflow_id)
                            : fmt::format("terminated run {} of '{}'", r.run_id, r.workflow_id);
  } else if (verb == "resume") {
    if (r.status != WorkflowStatus::failed && !r.blocked) {
      throw InvalidRunState(fmt::format("run {} of '{}' is {}: only a failed or blocked run can be resumed", r.run_id,
                                        r.workflow_id, status_text(r)));
    }
    doc["changed"] = true;
    if (!a.dry_run) tool.runs().resume(r.run_id, action);
    what = fmt::format("resumed run {} of '{}' (it was {})", r.run_id, r.workflow_id, status_text(r));
  } else if (verb == "fork") {
    if (a.dry_run) {
      check_fork(tool, r, a);
      what = fmt::format("forked run {} of '{}' from step {}", r.run_id, r.workflow_id, a.from_step);
    } else {
      auto handle = tool.runs().fork(r.run_id, a.from_step, action, {.workflow_id = a.new_id});
      doc["new_workflow_id"] = handle.id();
      doc["new_run_id"] = handle.run_id();
      what = fmt::format("forked run {} of '{}' from step {}: new run {} of '{}'", r.run_id, r.workflow_id, a.from_step,
                         handle.run_id(), handle.id());
    }
    doc["changed"] = true;
  } else {  // delete
    if (running) {
      throw InvalidRunState(
          fmt::format("run {} of '{}' is running: cancel or terminate it before deleting it", r.run_id, r.workflow_id));
    }
    if (!a.dry_run) tool.runs().remove(r.run_id, action);
    doc["changed"] = true;
    what = fmt::format("deleted run {} of '{}' and its history", r.run_id, r.workflow_id);
  }
  tool.print(doc, (a.dry_run ? "dry run, nothing written: would have " : "") + escaped(what) + "\n");
}

// --- schedules, stats, audit ---------------------------------------------------------------------

void list_schedules(Tool& tool) {
  Json all = Json::array();
  Table table({"ID", "WORKFLOW", "CRON", "ZONE", "NEXT FIRE", "PAUSED", "STARTED", "DROPPED"});
  for (const auto& s : tool.engine().schedules().list()) {
    all.push_back(to_json(s));
    table.add({s.id, s.spec.workflow, s.spec.cron, s.spec.time_zone, iso_time(s.next_fire), s.paused ? "yes" : "no",
               std::to_string(s.fires_started), std::to_string(s.fires_dropped)});
  }
  tool.print({{"schedules", all}}, all.empty() ? "no schedules\n" : table.str());
}

void show_schedule(Tool& tool, const std::string& id) {
  const ScheduleInfo s = tool.engine().schedules().get(id);
  tool.print(to_json(s),
             fmt::format(
                 "id             {}\nworkflow       {}\ninput          {}\ncron           {} ({})\nmisfire        "
                 "{} (grace {}, catch-up limit {})\npaused         {}\nnext fire      {}\nfires started  "
                 "{}\nfires dropped  {}\n",
                 escaped(s.id), escaped(s.spec.workflow), shown(s.spec.input), escaped(s.spec.cron),
                 escaped(s.spec.time_zone), to_string(s.spec.misfire), span(s.spec.misfire_grace), s.spec.catchup_limit,
                 s.paused ? "yes" : "no", iso_time(s.next_fire), s.fires_started, s.fires_dropped));
}

void show_stats(Tool& tool) {
  const Stats s = tool.runs().stats();
  std::string h = fmt::format("at {}\n\nruns by status\n", iso_time(s.at));
  Table statuses({"STATUS", "RUNS"});
  for (const auto status : all_statuses()) {
    const auto it = s.runs_by_status.find(status);
    statuses.add({std::string(to_string(status)), std::to_string(it == s.runs_by_status.end() ? 0 : it->second)});
  }
  statuses.add({"blocked", std::to_string(s.blocked)});
  h += statuses.str();
  if (s.oldest_running) {
    h += fmt::format("oldest running: '{}' ({}), for {}\n", escaped(s.oldest_running->workflow_id),
                     escaped(s.oldest_running->workflow_name), span(s.at - s.oldest_running->created_at));
  }
  Table tasks({"ACTIVITY", "READY", "DELAYED", "RUNNING", "OLDEST READY"});
  for (const auto& q : s.activity_queues) {
    tasks.add({q.activity, std::to_string(q.ready), std::to_string(q.delayed), std::to_string(q.running),
               q.ready ? fmt::format("{:.3f}s", q.oldest_ready_seconds) : "-"});
  }
  h += "\nactivity queues\n" + (s.activity_queues.empty() ? "none\n" : tasks.str());
  Table flows({"WORKFLOW", "WAITING", "OLDEST"});
  for (const auto& q : s.workflow_queues) {
    flows.add({q.workflow, std::to_string(q.waiting), fmt::format("{:.3f}s", q.oldest_waiting_seconds)});
  }
  h += "\nworkflows waiting for a replay\n" + (s.workflow_queues.empty() ? "none\n" : flows.str());
  Table engines({"ENGINE", "APP VERSION", "ACTIVITIES", "SLOTS", "SATURATION", "RUNNERS", "SEEN"});
  for (const auto& i : s.instances) {
    engines.add(
        {i.owner, or_dash(i.app_version), std::to_string(i.activities_leased), std::to_string(i.activity_capacity),
         i.saturation ? fmt::format("{:.0f}%", *i.saturation * 100) : "-", std::to_string(i.workflow_capacity),
         !i.seen_at ? "leases only" : fmt::format("{} ago{}", span(s.at - *i.seen_at), i.alive ? "" : " (gone)")});
  }
  h += "\nengines\n" + (s.instances.empty() ? "none\n" : engines.str());
  tool.print(to_json(s), h);
}

void show_audit(Tool& tool, int limit, std::int64_t before) {
  AuditQuery q{.limit = limit};
  if (before < 0) throw InvalidArgument(fmt::format("--before {} is not an audit entry id: ids are 1 or more", before));
  if (before > 0) q.before = before;
  Json all = Json::array();
  Table table({"ID", "AT", "ACTOR", "ACTION", "ON", "REASON"});
  for (const auto& e : tool.runs().audit(q)) {
    all.push_back(to_json(e));
    // What the action touched: a run's workflow id, a schedule, or "-" (a prune).
    const std::string schedule = e.details.is_object() ? e.details.value("schedule_id", "") : "";
    const std::string on = schedule.empty() ? or_dash(e.workflow_id) : "schedule " + schedule;
    table.add({std::to_string(e.id), iso_time(e.at), e.actor, e.action, on, e.reason});
  }
  tool.print({{"entries", all}}, all.empty() ? "no audit entries\n" : table.str());
}

// --- the console -----------------------------------------------------------------------------------

std::atomic<bool> stop_console{false};

// The console's secret: from --token-file or DURABLE_CONSOLE_TOKEN (any user can read another's
// argv in ps), or from --token; empty when none is given, and the console makes one.
std::string console_token(const std::string& token, const std::string& token_file) {
  const char* env = std::getenv("DURABLE_CONSOLE_TOKEN");
  const bool from_env = env != nullptr && *env != '\0';
  if (!token.empty() + !token_file.empty() + from_env > 1) {
    throw InvalidArgument("give the console's token one way: --token-file, DURABLE_CONSOLE_TOKEN or --token");
  }
  if (from_env) return env;
  if (token_file.empty()) return token;
  std::ifstream in(token_file);
  std::string secret;
  if (!in || !std::getline(in, secret)) throw InvalidArgument("--token-file '" + token_file + "': cannot read a line");
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.pop_back();
  if (secret.empty()) throw InvalidArgument("--token-file '" + token_file + "': its first line is empty");
  return secret;
}

void serve_console(Tool& tool, console::ConsoleOptions options, const std::string& token_file) {
  options.token = console_token(options.token, token_file);
  const bool given = !options.token.empty();
  console::Console c(tool.engine(), options);
  tool.runs().count_by_status();  // the database is there and at this build's version, before serving
  c.start();
  const std::string host = options.listen.substr(0, options.listen.rfind(':'));
  // A token made here is printed once, for the operator to open the page with; a given one never.
  std::cout << fmt::format("durable console on http://{}:{}/{}{}\n(Ctrl-C stops it)\n", host, c.port(),
                           given ? "" : "#token=" + c.token(), options.read_only ? " (read-only)" : "")
            << std::flush;
  std::signal(SIGINT, [](int) { stop_console = true; });
  std::signal(SIGTERM, [](int) { stop_console = true; });
  while (!stop_console) std::this_thread::sleep_for(std::chrono::milliseconds{100});
  c.stop();
}

// One line: libpq's messages span several, each a sentence of its own; other control bytes escaped.
std::string one_line(const std::string& text) {
  std::string out;
  bool break_pending = false;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      break_pending = !out.empty();
    } else if (c == ' ' || c == '\t') {
      if (!out.empty() && out.back() != ' ' && !break_pending) out += ' ';
    } else {
      if (break_pending) {
        while (!out.empty() && out.back() == ' ') out.pop_back();
        out += "; ";
        break_pending = false;
      }
      out += escaped(std::string(1, c));  // an escape sequence in an id must not reach the terminal
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

int exit_code_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const WorkflowNotFound& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return not_found;
  } catch (const ScheduleNotFound& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return not_found;
  } catch (const NotFound& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return not_found;
  } catch (const InvalidArgument& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return usage;
  } catch (const WorkflowAlreadyStarted& x) {  // input the database's state refuses, like InvalidRunState
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return usage;
  } catch (const WorkflowEnded& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return usage;
  } catch (const ScheduleAlreadyExists& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return usage;
  } catch (const DatabaseError& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return database;
  } catch (const std::exception& x) {
    std::cerr << "durable: " << one_line(x.what()) << "\n";
    return other;
  }
}

int run(int argc, char** argv) {
  Globals g;
  g.actor = default_actor();
  CLI::App app{"durable: find and fix workflow runs, schedules and the schema of a durable database"};
  app.require_subcommand(1);
  app.fallthrough();  // the options above work after the verb too
  app.footer("Exit codes: 0 ok, 1 not found, 2 usage or input refused, 3 database unreachable or refusing, 4 other.");
  app.add_option("--database-url", g.database_url, "libpq URI or conninfo (default: $DURABLE_DATABASE_URL)");
  app.add_option("--schema", g.schema, "the schema durable's tables are in")->capture_default_str();
  app.add_option("--actor", g.actor, "who acts, for the audit trail (default: $USER@host)");
  app.add_flag("--json", g.json, "print one JSON document instead of text");
  app.add_option("--codec-plugin", g.codec_plugin,
                 "a payload codec plugin (a shared library, docs/codec.md) to decode what engines with a codec "
                 "stored; without it such values show as [encoded with key K]")
      ->envname("DURABLE_CODEC_PLUGIN");
  app.add_option("--codec-config", g.codec_config, "what the codec plugin reads its keys from (its docs say what)")
      ->envname("DURABLE_CODEC_CONFIG");
  Tool tool(g);
  int code = ok;
  // Each verb runs after the whole command line parsed; what it throws becomes its exit code.
  auto verb = [&](CLI::App* sub, std::function<void()> body) {
    sub->callback([&code, body = std::move(body)] {
      try {
        body();
      } catch (...) {
        code = exit_code_of(std::current_exception());
      }
    });
  };
  auto example = [](CLI::App* sub, const std::string& text) {
    sub->footer("Example:\n  " + text +
                "\n\nEvery verb also takes --database-url, --schema, --actor, --json and --codec-plugin (see durable "
                "--help).");
  };

  // migrate
  bool check = false;
  auto* migrate = app.add_subcommand("migrate", "apply the schema's migrations and print its version");
  migrate->add_flag("--check", check, "change nothing; exit 1 when the schema is behind this build");
  example(migrate, "durable migrate --check --schema orders");
  verb(migrate, [&] {
    check_database_url(g.database_url);
    if (check) {
      const SchemaVersion v = schema_version(g.database_url, g.schema);
      tool.print(
          {{"schema", g.schema}, {"version", v.current}, {"latest", v.latest}, {"up_to_date", v.up_to_date()}},
          fmt::format("schema '{}' is at version {}; this build reads version {}\n", g.schema, v.current, v.latest));
      if (v.current < v.latest) throw NotFound(fmt::format("schema '{}' is behind: run `durable migrate`", g.schema));
      if (v.current > v.latest) {
        throw DatabaseError(fmt::format("schema '{}' is newer than this build: upgrade durable", g.schema));
      }
      return;
    }
    const int before = schema_version(g.database_url, g.schema).current;
    const int after = migrate_schema(g.database_url, g.schema);
    tool.print({{"schema", g.schema}, {"version", after}, {"migrated_from", before}},
               before == after ? fmt::format("schema '{}' is at version {}: nothing to do\n", g.schema, after)
                               : fmt::format("schema '{}' migrated from version {} to {}\n", g.schema, before, after));
  });

  // workflows
  auto* workflows = app.add_subcommand("workflows", "list, read and act on workflow runs")->require_subcommand(1);
  workflows->fallthrough();
  ListArgs la;
  auto* list = workflows->add_subcommand("list", "list runs, newest first");
  list->add_option("--status", la.statuses, "running, completed, failed, cancelled or continued (repeatable)");
  list->add_option("--name", la.name, "workflow name");
  list->add_option("--id-prefix", la.id_prefix, "workflow ids starting with this");
  list->add_option("--since", la.since, "created at or after: ISO-8601 time or an age (90s, 30m, 12h, 7d)");
  list->add_option("--until", la.until, "created before: ISO-8601 time or an age");
  list->add_flag("--blocked", la.blocked, "only running runs blocked by a non-determinism error");
  list->add_option("--app-version", la.app_version, "runs of this app version (\"\" for unversioned)")
      ->each([&](const std::string&) { la.app_version_given = true; });
  list->add_option("--limit", la.limit, "runs per page, 1 to 1000")->capture_default_str();
  list->add_option("--cursor", la.cursor, "the page after the one that printed it");
  example(list, "durable workflows list --status failed --since 24h --name checkout");
  verb(list, [&] { list_runs(tool, la); });

  std::string id, run_id;
  auto* show = workflows->add_subcommand("show", "one run in full: status, input, result or error, links");
  show->add_option("id", id, "workflow id")->required();
  show->add_option("--run", run_id, "a run id of it (default: its latest run)");
  example(show, "durable workflows show order-42");
  verb(show, [&] { show_run(tool, id, run_id); });

  auto* history = workflows->add_subcommand("history", "a run's timeline: events, and attempts with their errors");
  history->add_option("id", id, "workflow id")->required();
  history->add_option("--run", run_id, "a run id of it (default: its latest run)");
  example(history, "durable workflows history order-42");
  verb(history, [&] { show_history(tool, id, run_id); });

  auto* exp = workflows->add_subcommand("export", "a run's history as versioned JSON (durable.history)");
  exp->add_option("id", id, "workflow id")->required();
  exp->add_option("--run", run_id, "a run id of it (default: its latest run)");
  example(exp, "durable workflows export order-42 > order-42.json");
  verb(exp, [&] { std::cout << tool.runs().export_history(tool.run_of(id, run_id).run_id).dump(2) << "\n"; });

  ActionArgs aa;
  auto add_action = [&](const std::string& name, const std::string& help, const std::string& ex) {
    auto* sub = workflows->add_subcommand(name, help);
    sub->add_option("id", aa.id, "workflow id")->required();
    sub->add_option("--run", aa.run, "a run id of it (default: its latest run)");
    sub->add_option("--reason", aa.reason, "why, for the audit trail")->required();
    sub->add_flag("--dry-run", aa.dry_run, "check and say what would happen; write nothing");
    example(sub, ex);
    verb(sub, [&, name] { act(tool, name, aa); });
    return sub;
  };
  add_action("cancel", "ask a running run to cancel (its code sees the cancel and may clean up)",
             "durable workflows cancel order-42 --reason \"customer asked\"");
  add_action("terminate", "end a running run as cancelled at once, its code not told",
             "durable workflows terminate order-42 --reason \"no engine runs this code any more\"");
  add_action("resume", "run a failed run again from its journal, or unblock a blocked run",
             "durable workflows resume order-42 --reason \"payment provider fixed\"");
  auto* fork =
      add_action("fork", "start a new run from a run's journal up to a step",
                 "durable workflows fork order-42 --from-step 3 --reason \"replay after fix\" --new-id order-42b");
  fork->add_option("--from-step", aa.from_step_text, "keep the journal's steps before this one (0: start over)")
      ->required();
  fork->add_option("--new-id", aa.new_id,
                   "the new run's workflow id (default: the same, whose latest run must have ended)");
  add_action("delete", "delete an ended run and its history",
             "durable workflows delete order-42 --reason \"test data\"");

  std::string topic, payload, key;
  auto* send = workflows->add_subcommand("send", "send a message to a run's inbox");
  send->add_option("id", id, "workflow id")->required();
  send->add_option("topic", topic, "the topic the workflow receives on")->required();
  send->add_option("payload", payload, "the message as JSON")->required();
  send->add_option("--key", key, "idempotency key: a second send with it sends nothing");
  example(send, "durable workflows send order-42 approval '{\"approved\": true}' --key approval-1");
  verb(send, [&] {
    Json message;
    try {
      message = Json::parse(payload);
    } catch (const Json::parse_error& e) {
      throw PayloadError(
          fmt::format("the payload is not JSON ({}): quote it, e.g. '{{\"approved\": true}}'", e.what()));
    }
    const std::string message_id = tool.engine().send(id, topic, message, {.idempotency_key = key});
    tool.print({{"workflow_id", id}, {"topic", topic}, {"message_id", message_id}},
               escaped(fmt::format("sent message {} to '{}' on topic '{}'", message_id, id, topic)) + "\n");
  });

  // schedules
  auto* schedules =
      app.add_subcommand("schedules", "list, read, pause, resume and delete schedules")->require_subcommand(1);
  schedules->fallthrough();
  auto* slist = schedules->add_subcommand("list", "every schedule, by id");
  example(slist, "durable schedules list");
  verb(slist, [&] { list_schedules(tool); });
  std::string sid, sreason;
  bool sdry = false;
  auto* sshow = schedules->add_subcommand("show", "one schedule");
  sshow->add_option("id", sid, "schedule id")->required();
  example(sshow, "durable schedules show nightly-report");
  verb(sshow, [&] { show_schedule(tool, sid); });
  for (const std::string name : {"pause", "resume", "delete"}) {
    auto* sub = schedules->add_subcommand(name, name == "pause" ? "stop firing (missed fires follow the misfire policy)"
                                                : name == "resume" ? "fire again"
                                                                   : "delete it (the runs it started stay)");
    sub->add_option("id", sid, "schedule id")->required();
    sub->add_option("--reason", sreason, "why, for the audit trail")->required();
    if (name == "delete") sub->add_flag("--dry-run", sdry, "check and say what would happen; write nothing");
    example(sub, fmt::format("durable schedules {} nightly-report --reason \"{}\"", name,
                             name == "pause"    ? "report source down"
                             : name == "resume" ? "source back"
                                                : "replaced"));
    verb(sub, [&, name] {
      Schedules& s = tool.engine().schedules();
      s.get(sid);  // ScheduleNotFound before anything
      const OperatorAction action = tool.action(sreason);
      if (name == "pause") s.pause(sid, action);
      if (name == "resume") s.resume(sid, action);
      if (name == "delete" && !sdry) s.remove(sid, action);
      const std::string done = name == "pause" ? "paused" : name == "resume" ? "resumed" : "deleted";
      tool.print(
          {{"schedule", sid}, {"action", name}, {"dry_run", sdry}},
          fmt::format("{}{} schedule '{}'\n", sdry ? "dry run, nothing written: would have " : "", done, escaped(sid)));
    });
  }

  auto* stats = app.add_subcommand("stats", "runs by status, queues and engines, across the schema");
  example(stats, "durable stats --json");
  verb(stats, [&] { show_stats(tool); });

  std::string ended_before, preason;
  bool pdry = false;
  auto* prune = app.add_subcommand("prune", "delete runs that ended before a time, with their history");
  prune->add_option("--ended-before", ended_before, "ISO-8601 time or an age (30d)")->required();
  prune->add_option("--reason", preason, "why, for the audit trail")->required();
  prune->add_flag("--dry-run", pdry, "count what would be deleted; write nothing");
  example(prune, "durable prune --ended-before 30d --reason \"retention\" --dry-run");
  verb(prune, [&] {
    const TimePoint cutoff = parse_time(ended_before, "--ended-before", std::chrono::system_clock::now());
    const PruneOutcome p = tool.runs().prune(cutoff, tool.action(preason), pdry);
    tool.print({{"runs", p.runs}, {"batches", p.batches}, {"dry_run", pdry}, {"ended_before", iso_time(cutoff)}},
               fmt::format("{} {} run(s) that ended before {}\n",
                           pdry ? "dry run, nothing written: would delete" : "deleted", p.runs, iso_time(cutoff)));
  });

  std::string created_before, ereason;
  auto* expire = app.add_subcommand("expire-idempotency-results",
                                    "forget activity idempotency results committed before a time: later tasks with "
                                    "those keys run their bodies again");
  expire->add_option("--created-before", created_before, "ISO-8601 time or an age (90d)")->required();
  expire->add_option("--reason", ereason, "why, for the audit trail")->required();
  example(expire, "durable expire-idempotency-results --created-before 90d --reason \"retention\"");
  verb(expire, [&] {
    const TimePoint cutoff = parse_time(created_before, "--created-before", std::chrono::system_clock::now());
    const std::int64_t expired = tool.runs().expire_idempotency_results(cutoff, tool.action(ereason));
    tool.print({{"results", expired}, {"created_before", iso_time(cutoff)}},
               fmt::format("forgot {} idempotency result(s) committed before {}\n", expired, iso_time(cutoff)));
  });

  int alimit = 50;
  std::int64_t abefore = 0;
  auto* audit = app.add_subcommand("audit", "the audit trail of operator actions, newest first");
  audit->add_option("--limit", alimit, "entries, 1 to 1000")->capture_default_str();
  audit->add_option("--before", abefore, "entries older than this id (the last of the page before)");
  example(audit, "durable audit --limit 20");
  verb(audit, [&] { show_audit(tool, alimit, abefore); });

  console::ConsoleOptions con_options;
  std::string token_file;
  auto* con = app.add_subcommand("console", "serve the web console");
  con->add_option("--listen", con_options.listen, "host:port (a non-loopback host needs a token)")
      ->capture_default_str();
  con->add_flag("--read-only", con_options.read_only, "refuse every action");
  con->add_option("--token-file", token_file,
                  "a file whose first line is the secret actions (and non-loopback reads) need; or set "
                  "DURABLE_CONSOLE_TOKEN (default: a random one, printed)");
  con->add_option("--token", con_options.token,
                  "the secret itself (other users can read it in ps: prefer --token-file)");
  con->add_option("--public-origin", con_options.public_origin,
                  "scheme://host[:port] browsers reach the console at through a TLS proxy (its actions are accepted)");
  con->add_option("--max-connections", con_options.max_connections, "connections served at once; more get 503")
      ->capture_default_str();
  example(con, "durable console --listen 127.0.0.1:8233 --read-only");
  verb(con, [&] {
    con_options.actor = g.actor;
    serve_console(tool, con_options, token_file);
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    // A verb that is not one: CLI11 says only that one is required.
    CLI::App* at = &app;
    while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
    const auto rest = app.remaining(true);
    if (!at->get_subcommands({}).empty()) {
      std::string verbs;
      for (const auto* sub : at->get_subcommands({})) verbs += (verbs.empty() ? "" : ", ") + sub->get_name();
      const std::string where = at == &app ? std::string("durable") : "durable " + at->get_name();
      if (!rest.empty() && rest.front().rfind('-', 0) != 0) {
        std::cerr << fmt::format("durable: unknown verb '{}' for '{}': use one of {} (see --help)\n", rest.front(),
                                 where, verbs);
      } else {
        std::cerr << fmt::format("durable: '{}' needs a verb: one of {} (see --help)\n", where, verbs);
      }
      return usage;
    }
    std::cerr << "durable: " << one_line(e.what()) << " (see --help)\n";
    return usage;
  } catch (const CLI::ParseError& e) {
    std::cerr << "durable: " << one_line(e.what()) << " (see --help)\n";
    return usage;
  }
  return code;
}

}  // namespace
}  // namespace durable::cli

int main(int argc, char** argv) { return durable::cli::run(argc, argv); }
