// `durable stats` and `durable audit`: what is across the schema, read only.
#include <fmt/format.h>

#include "commands.hpp"
#include "text.hpp"
#include "views.hpp"

namespace durable::cli {
namespace {

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
    h += fmt::format("oldest running: '{}' ({}), for {}\n", escaped(s.oldest_running->workflow_id.str()),
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
  Table named({"QUEUE", "PAUSED", "QUEUED", "RUNNING", "THROTTLED", "OLDEST QUEUED", "ACTIVITIES RUNNING",
               "ACTIVITIES WAITING"});
  for (const auto& q : s.queues) {
    named.add({q.spec.name, q.paused ? "yes" : "no", std::to_string(q.queued), std::to_string(q.running),
               std::to_string(q.throttled), fmt::format("{:.3f}s", q.oldest_queued_seconds),
               std::to_string(q.activities_running), std::to_string(q.activities_waiting)});
  }
  h += "\nnamed queues\n" + (s.queues.empty() ? "none\n" : named.str());
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
    // What the action touched: a run's workflow id, a schedule, a queue, or "-" (a prune).
    const std::string schedule = e.details.is_object() ? e.details.value("schedule_id", "") : "";
    const std::string queue = e.details.is_object() ? e.details.value("queue", "") : "";
    const std::string on = !schedule.empty() ? "schedule " + schedule
                           : !queue.empty()  ? "queue " + queue
                                             : or_dash(e.workflow_id.str());
    table.add({std::to_string(e.id), iso_time(e.at), e.actor, e.action, on, e.reason});
  }
  tool.print({{"entries", all}}, all.empty() ? "no audit entries\n" : table.str());
}

}  // namespace

void add_stats_command(CLI::App& app, Cli& cli) {
  auto* stats = app.add_subcommand("stats", "runs by status, queues and engines, across the schema");
  example(stats, "durable stats --json");
  cli.verb(stats, [&cli] { show_stats(cli.tool); });
}

void add_audit_command(CLI::App& app, Cli& cli) {
  struct AuditArgs {
    int limit = 50;
    std::int64_t before = 0;
  };
  auto a = std::make_shared<AuditArgs>();
  auto* audit = app.add_subcommand("audit", "the audit trail of operator actions, newest first");
  audit->add_option("--limit", a->limit, "entries, 1 to 1000")->capture_default_str();
  audit->add_option("--before", a->before, "entries older than this id (the last of the page before)");
  example(audit, "durable audit --limit 20");
  cli.verb(audit, [&cli, a] { show_audit(cli.tool, a->limit, a->before); });
}

}  // namespace durable::cli
