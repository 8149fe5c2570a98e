// `durable workflows cancel|terminate|resume|fork|delete`: an action on a run, audited with its
// reason; with --dry-run checked and said, nothing written.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "commands.hpp"
#include "text.hpp"

namespace durable::cli {
namespace {

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
  const WorkflowId id = a.new_id.empty() ? r.workflow_id : WorkflowId{a.new_id};
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
      tool.print(doc, fmt::format("run {} of '{}' had ended ({}): nothing to {}\n", r.run_id,
                                  escaped(r.workflow_id.str()), to_string(r.status), verb));
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

}  // namespace

void add_run_action_commands(CLI::App& workflows, Cli& cli) {
  auto aa = std::make_shared<ActionArgs>();
  auto add_action = [&](const std::string& name, const std::string& help, const std::string& ex) {
    auto* sub = workflows.add_subcommand(name, help);
    sub->add_option("id", aa->id, "workflow id")->required();
    sub->add_option("--run", aa->run, "a run id of it (default: its latest run)");
    sub->add_option("--reason", aa->reason, "why, for the audit trail")->required();
    sub->add_flag("--dry-run", aa->dry_run, "check and say what would happen; write nothing");
    example(sub, ex);
    cli.verb(sub, [&cli, aa, name] { act(cli.tool, name, *aa); });
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
  fork->add_option("--from-step", aa->from_step_text, "keep the journal's steps before this one (0: start over)")
      ->required();
  fork->add_option("--new-id", aa->new_id,
                   "the new run's workflow id (default: the same, whose latest run must have ended)");
  add_action("delete", "delete an ended run and its history",
             "durable workflows delete order-42 --reason \"test data\"");
}

}  // namespace durable::cli
