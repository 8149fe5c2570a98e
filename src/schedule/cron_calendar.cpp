#include <date/date.h>
#include <date/tz.h>
#include <fmt/format.h>

#include <array>
#include <stdexcept>

#include "durable/cron.hpp"
#include "durable/errors.hpp"

namespace durable {

using date::days;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
using LocalMinute = date::local_time<minutes>;

struct CronCalendar::Zone {
  const date::time_zone* tz;  // owned by the process-wide tz database, lives forever
};

namespace {

[[noreturn]] void unknown_zone(const std::string& name) {
  throw UnknownTimeZone(fmt::format(
      "unknown time zone '{}': use an IANA name such as \"UTC\", \"Europe/Berlin\" or \"America/New_York\"", name));
}

// How far ahead next_after looks. parse() rejects expressions that never fire; the rarest that
// remain fire every few years (Feb 29 skips 2100, a given date on a given weekday up to ~12 years).
constexpr days search_limit{366 * 30};

// The first instant at which the local minute `local` is on the zone's clocks (see the header):
// a repeated minute maps to its first occurrence, a skipped one to the transition that skips it.
date::sys_seconds first_instant(const date::time_zone& tz, LocalMinute local) {
  const date::local_seconds l{local};
  const date::local_info info = tz.get_info(l);
  switch (info.result) {
    case date::local_info::unique:
    case date::local_info::ambiguous:  // `first` holds the offset before the transition: the earlier instant
      return date::sys_seconds{l.time_since_epoch() - info.first.offset};
    case date::local_info::nonexistent: return info.second.begin;
  }
  throw std::logic_error("date::local_info has an unknown result");
}

}  // namespace

CronCalendar::CronCalendar(CronExpression cron, const std::string& time_zone)
    : cron_(std::move(cron)), time_zone_(time_zone) {
  if (time_zone.empty()) unknown_zone(time_zone);
  try {
    zone_ = std::make_unique<Zone>(Zone{date::locate_zone(time_zone)});
  } catch (const std::runtime_error&) {  // locate_zone's way of saying "no such zone"
    unknown_zone(time_zone);
  }
}

CronCalendar::~CronCalendar() = default;

CronCalendar::CronCalendar(const CronCalendar& other)
    : cron_(other.cron_), time_zone_(other.time_zone_), zone_(std::make_unique<Zone>(*other.zone_)) {}

CronCalendar& CronCalendar::operator=(const CronCalendar& other) {
  if (this != &other) {
    cron_ = other.cron_;
    time_zone_ = other.time_zone_;
    zone_ = std::make_unique<Zone>(*other.zone_);
  }
  return *this;
}

CronCalendar::TimePoint CronCalendar::next_after(TimePoint t) const {
  const date::time_zone& tz = *zone_->tz;
  const CronExpression::Fields& f = cron_.fields();
  const date::sys_seconds after = date::floor<seconds>(t);

  // Walk local civil time, skipping whole months, days and hours that cannot match.
  LocalMinute local = date::floor<minutes>(tz.to_local(after)) + minutes{1};
  const LocalMinute limit = local + search_limit;
  while (local < limit) {
    const date::local_days day = date::floor<days>(local);
    const date::year_month_day ymd{day};
    const auto month = static_cast<unsigned>(ymd.month());
    if (!f.months.test(month)) {
      local = date::local_days{(ymd.year() / ymd.month() + date::months{1}) / 1};
      continue;
    }
    const auto weekday = date::weekday{day}.c_encoding();  // 0 = Sunday, like cron
    if (!cron_.matches_day(month, static_cast<unsigned>(ymd.day()), weekday)) {
      local = day + days{1};
      continue;
    }
    const LocalMinute hour_start = date::floor<hours>(local);
    const LocalMinute next_hour = hour_start + hours{1};  // hour 23 rolls over to the next day
    if (!f.hours.test(static_cast<std::size_t>((hour_start - day) / hours{1}))) {
      local = next_hour;
      continue;
    }
    // The first allowed minute at or after this one within the hour, if any.
    while (local < next_hour && !f.minutes.test(static_cast<std::size_t>((local - hour_start).count()))) {
      local += minutes{1};
    }
    if (local == next_hour) continue;
    // A skipped minute can collapse onto an instant already passed, and the second pass through a
    // repeated hour maps back to the first pass: both are at or before `t`, so look further.
    const date::sys_seconds fire = first_instant(tz, local);
    if (fire > t) return fire;
    local += minutes{1};
  }
  throw std::logic_error(
      fmt::format("cron expression '{}' in {}: no fire time within 30 years", cron_.text(), time_zone_));
}

CronCalendar::TimePoint CronCalendar::previous_before(TimePoint t) const {
  // Look back over growing spans: the first span holding a fire instant ends the search, and the
  // last fire in it before `t` is the answer. Small spans keep the walk short for frequent crons.
  constexpr std::array<hours, 6> spans = {hours{1},        hours{24},           hours{24 * 32},
                                          hours{24 * 367}, hours{24 * 366 * 9}, hours{24 * 366 * 29}};
  for (const hours span : spans) {
    TimePoint fire = next_after(t - span);
    if (fire >= t) continue;
    for (TimePoint next = next_after(fire); next < t; next = next_after(fire)) fire = next;
    return fire;
  }
  throw std::logic_error(
      fmt::format("cron expression '{}' in {}: no fire time within 29 years before", cron_.text(), time_zone_));
}

std::string CronCalendar::format(TimePoint t) const {
  const date::zoned_time<seconds> local{zone_->tz, date::floor<seconds>(t)};
  return date::format("%FT%T%Ez", local);
}

}  // namespace durable
