// `durable prune` and `durable expire-idempotency-results`: forgetting what is older than a time,
// audited with its reason.
#include <fmt/format.h>

#include "commands.hpp"
#include "text.hpp"

namespace durable::cli {
namespace {

struct CutoffArgs {
  std::string cutoff, reason;
  bool dry_run = false;
};

void prune(Tool& tool, const CutoffArgs& a) {
  const TimePoint cutoff = parse_time(a.cutoff, "--ended-before", std::chrono::system_clock::now());
  const PruneOutcome p = tool.runs().prune(cutoff, tool.action(a.reason), a.dry_run);
  tool.print({{"runs", p.runs}, {"batches", p.batches}, {"dry_run", a.dry_run}, {"ended_before", iso_time(cutoff)}},
             fmt::format("{} {} run(s) that ended before {}\n",
                         a.dry_run ? "dry run, nothing written: would delete" : "deleted", p.runs, iso_time(cutoff)));
}

void expire_idempotency_results(Tool& tool, const CutoffArgs& a) {
  const TimePoint cutoff = parse_time(a.cutoff, "--created-before", std::chrono::system_clock::now());
  const std::int64_t expired = tool.runs().expire_idempotency_results(cutoff, tool.action(a.reason));
  tool.print({{"results", expired}, {"created_before", iso_time(cutoff)}},
             fmt::format("forgot {} idempotency result(s) committed before {}\n", expired, iso_time(cutoff)));
}

}  // namespace

void add_retention_commands(CLI::App& app, Cli& cli) {
  auto p = std::make_shared<CutoffArgs>();
  auto* prune_verb = app.add_subcommand("prune", "delete runs that ended before a time, with their history");
  prune_verb->add_option("--ended-before", p->cutoff, "ISO-8601 time or an age (30d)")->required();
  prune_verb->add_option("--reason", p->reason, "why, for the audit trail")->required();
  prune_verb->add_flag("--dry-run", p->dry_run, "count what would be deleted; write nothing");
  example(prune_verb, "durable prune --ended-before 30d --reason \"retention\" --dry-run");
  cli.verb(prune_verb, [&cli, p] { prune(cli.tool, *p); });

  auto e = std::make_shared<CutoffArgs>();
  auto* expire = app.add_subcommand("expire-idempotency-results",
                                    "forget activity idempotency results committed before a time: later tasks with "
                                    "those keys run their bodies again");
  expire->add_option("--created-before", e->cutoff, "ISO-8601 time or an age (90d)")->required();
  expire->add_option("--reason", e->reason, "why, for the audit trail")->required();
  example(expire, "durable expire-idempotency-results --created-before 90d --reason \"retention\"");
  cli.verb(expire, [&cli, e] { expire_idempotency_results(cli.tool, *e); });
}

}  // namespace durable::cli
