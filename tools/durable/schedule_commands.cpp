// `durable schedules`: list and show schedules; pause, resume and delete one, audited.
#include <fmt/format.h>

#include "commands.hpp"
#include "text.hpp"
#include "views.hpp"

namespace durable::cli {
namespace {

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

struct ScheduleActionArgs {
  std::string id, reason;
  bool dry_run = false;
};

// pause, resume or delete.
void act_on_schedule(Tool& tool, const std::string& name, const ScheduleActionArgs& a) {
  Schedules& s = tool.engine().schedules();
  s.get(a.id);  // ScheduleNotFound before anything
  const OperatorAction action = tool.action(a.reason);
  if (name == "pause") s.pause(a.id, action);
  if (name == "resume") s.resume(a.id, action);
  if (name == "delete" && !a.dry_run) s.remove(a.id, action);
  const std::string done = name == "pause" ? "paused" : name == "resume" ? "resumed" : "deleted";
  tool.print({{"schedule", a.id}, {"action", name}, {"dry_run", a.dry_run}},
             fmt::format("{}{} schedule '{}'\n", a.dry_run ? "dry run, nothing written: would have " : "", done,
                         escaped(a.id)));
}

}  // namespace

void add_schedule_commands(CLI::App& app, Cli& cli) {
  auto* schedules =
      app.add_subcommand("schedules", "list, read, pause, resume and delete schedules")->require_subcommand(1);
  schedules->fallthrough();
  auto* slist = schedules->add_subcommand("list", "every schedule, by id");
  example(slist, "durable schedules list");
  cli.verb(slist, [&cli] { list_schedules(cli.tool); });
  auto a = std::make_shared<ScheduleActionArgs>();
  auto* sshow = schedules->add_subcommand("show", "one schedule");
  sshow->add_option("id", a->id, "schedule id")->required();
  example(sshow, "durable schedules show nightly-report");
  cli.verb(sshow, [&cli, a] { show_schedule(cli.tool, a->id); });
  for (const std::string name : {"pause", "resume", "delete"}) {
    auto* sub = schedules->add_subcommand(name, name == "pause" ? "stop firing (missed fires follow the misfire policy)"
                                                : name == "resume" ? "fire again"
                                                                   : "delete it (the runs it started stay)");
    sub->add_option("id", a->id, "schedule id")->required();
    sub->add_option("--reason", a->reason, "why, for the audit trail")->required();
    if (name == "delete") sub->add_flag("--dry-run", a->dry_run, "check and say what would happen; write nothing");
    example(sub, fmt::format("durable schedules {} nightly-report --reason \"{}\"", name,
                             name == "pause"    ? "report source down"
                             : name == "resume" ? "source back"
                                                : "replaced"));
    cli.verb(sub, [&cli, a, name] { act_on_schedule(cli.tool, name, *a); });
  }
}

}  // namespace durable::cli
