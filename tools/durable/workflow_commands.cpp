// `durable workflows`: list runs, read one (show, history, export), act on it (run_actions.cpp),
// and send a message to its inbox.
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "commands.hpp"
#include "text.hpp"
#include "views.hpp"

namespace durable::cli {
namespace {

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
    table.add({r.workflow_id.str(), r.workflow_name, status_text(r), std::string(to_string(r.started_by)),
               iso_time(r.created_at), or_dash(iso_time(r.ended_at)), or_dash(r.app_version), r.run_id.str()});
  }
  std::string human = page.runs.empty() ? "no runs match\n" : table.str();
  if (!page.next_cursor.empty()) human += fmt::format("more: --cursor {}\n", page.next_cursor);
  tool.print({{"runs", runs}, {"next_cursor", page.next_cursor}}, human);
}

void show_run(Tool& tool, const std::string& id, const std::string& run_id) {
  const RunInfo r = tool.run_of(id, run_id);
  std::string h = fmt::format("workflow id   {}\nrun id        {}{}\nworkflow      {}\nstatus        {}\n",
                              escaped(r.workflow_id.str()), r.run_id, r.latest ? " (latest)" : "",
                              escaped(r.workflow_name), status_text(r));
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
  link("parent run", r.parent_run_id.str());
  link("forked from",
       r.forked_from_run.empty() ? "" : fmt::format("{} at step {}", r.forked_from_run, r.forked_from_step));
  link("continued from", r.continued_from_run.str());
  link("continued as", r.continued_as_run.str());
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
      fmt::format("run {} of '{}' ({})\n\n", r.run_id, escaped(r.workflow_id.str()), status_text(r)) + timeline.str();
  if (!all.attempts.empty()) h += "\nattempts\n" + tries.str();
  tool.print({{"run", to_json(static_cast<const RunSummary&>(r))}, {"events", events}, {"attempts", attempts}}, h);
}

struct SendArgs {
  std::string id, topic, payload, key;
};

void send_message(Tool& tool, const SendArgs& a) {
  Json message;
  try {
    message = Json::parse(a.payload);
  } catch (const Json::parse_error& e) {
    throw PayloadError(fmt::format("the payload is not JSON ({}): quote it, e.g. '{{\"approved\": true}}'", e.what()));
  }
  const std::string message_id = tool.engine().send(a.id, a.topic, message, {.idempotency_key = a.key});
  tool.print({{"workflow_id", a.id}, {"topic", a.topic}, {"message_id", message_id}},
             escaped(fmt::format("sent message {} to '{}' on topic '{}'", message_id, a.id, a.topic)) + "\n");
}

void add_list(CLI::App& workflows, Cli& cli) {
  auto la = std::make_shared<ListArgs>();
  auto* list = workflows.add_subcommand("list", "list runs, newest first");
  list->add_option("--status", la->statuses, "running, completed, failed, cancelled or continued (repeatable)");
  list->add_option("--name", la->name, "workflow name");
  list->add_option("--id-prefix", la->id_prefix, "workflow ids starting with this");
  list->add_option("--since", la->since, "created at or after: ISO-8601 time or an age (90s, 30m, 12h, 7d)");
  list->add_option("--until", la->until, "created before: ISO-8601 time or an age");
  list->add_flag("--blocked", la->blocked, "only running runs blocked by a non-determinism error");
  list->add_option("--app-version", la->app_version, "runs of this app version (\"\" for unversioned)")
      ->each([la](const std::string&) { la->app_version_given = true; });
  list->add_option("--limit", la->limit, "runs per page, 1 to 1000")->capture_default_str();
  list->add_option("--cursor", la->cursor, "the page after the one that printed it");
  example(list, "durable workflows list --status failed --since 24h --name checkout");
  cli.verb(list, [&cli, la] { list_runs(cli.tool, *la); });
}

// show, history and export: one run, named by its workflow id and perhaps its run id.
void add_run_readers(CLI::App& workflows, Cli& cli) {
  struct RunArgs {
    std::string id, run_id;
  };
  const auto add = [&](const char* name, const char* help, const char* ex, std::function<void(const RunArgs&)> read) {
    auto a = std::make_shared<RunArgs>();
    auto* sub = workflows.add_subcommand(name, help);
    sub->add_option("id", a->id, "workflow id")->required();
    sub->add_option("--run", a->run_id, "a run id of it (default: its latest run)");
    example(sub, ex);
    cli.verb(sub, [a, read = std::move(read)] { read(*a); });
  };
  Tool& tool = cli.tool;
  add("show", "one run in full: status, input, result or error, links", "durable workflows show order-42",
      [&tool](const RunArgs& a) { show_run(tool, a.id, a.run_id); });
  add("history", "a run's timeline: events, and attempts with their errors", "durable workflows history order-42",
      [&tool](const RunArgs& a) { show_history(tool, a.id, a.run_id); });
  add("export", "a run's history as versioned JSON (durable.history)",
      "durable workflows export order-42 > order-42.json", [&tool](const RunArgs& a) {
        std::cout << tool.runs().export_history(tool.run_of(a.id, a.run_id).run_id).dump(2) << "\n";
      });
}

void add_send(CLI::App& workflows, Cli& cli) {
  auto a = std::make_shared<SendArgs>();
  auto* send = workflows.add_subcommand("send", "send a message to a run's inbox");
  send->add_option("id", a->id, "workflow id")->required();
  send->add_option("topic", a->topic, "the topic the workflow receives on")->required();
  send->add_option("payload", a->payload, "the message as JSON")->required();
  send->add_option("--key", a->key, "idempotency key: a second send with it sends nothing");
  example(send, "durable workflows send order-42 approval '{\"approved\": true}' --key approval-1");
  cli.verb(send, [&cli, a] { send_message(cli.tool, *a); });
}

}  // namespace

void add_workflow_commands(CLI::App& app, Cli& cli) {
  auto* workflows = app.add_subcommand("workflows", "list, read and act on workflow runs")->require_subcommand(1);
  workflows->fallthrough();
  add_list(*workflows, cli);
  add_run_readers(*workflows, cli);
  add_run_action_commands(*workflows, cli);
  add_send(*workflows, cli);
}

}  // namespace durable::cli
