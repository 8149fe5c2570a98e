// libFuzzer target: the cron parser, and the calendar of each expression it accepts.
// Only InvalidCronExpression (from parse) is an expected exception; anything else escaping, a
// sanitizer report or a failed FUZZ_ASSERT is a finding.
//
// std::logic_error is deliberately not caught. The calendar throws it when next_after finds no
// fire within 30 years, or previous_before none within 29 years back. parse() rejects expressions
// that never fire, and between 1901 and 2099 the calendar repeats every 28 years, so every
// accepted expression (the rarest: Feb 29 on a Sunday, via a `*/7` weekday field) fires at least
// once in any 28 years around the 2026-2027 instants used here: a logic_error would be a bug.
#include <date/date.h>
#include <date/tz.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "durable/cron.hpp"
#include "durable/errors.hpp"
#include "fuzz_assert.hpp"

namespace {

using durable::CronCalendar;
using durable::CronExpression;
using TimePoint = CronCalendar::TimePoint;
using namespace std::chrono_literals;
using namespace date::literals;

const std::array<const char*, 2> zones = {"UTC", "America/New_York"};

// Around New York's DST transitions: just before spring forward (07:00Z), in the first and the
// second pass of the repeated hour 01:00-02:00 (06:00Z), a year boundary, and a non-whole second.
const std::array<TimePoint, 5> instants = {
    date::sys_days{2026_y / 3 / 8} + 6h + 59min,
    date::sys_days{2026_y / 11 / 1} + 5h + 45min,
    date::sys_days{2026_y / 11 / 1} + 6h + 30min,
    date::sys_days{2027_y / 1 / 1} + 0h,
    date::sys_days{2026_y / 6 / 30} + 23h + 59min + 59s + 500ms,
};

// Whether `t` is a fire instant of `cron` in `tz` as the header defines them: a whole minute whose
// local time matches, the first occurrence of a repeated local minute, or else the transition
// instant onto which skipped local minutes collapse (02:30 on a spring-forward night fires at 03:00).
bool is_fire_instant(const CronExpression& cron, const date::time_zone& tz, TimePoint t) {
  const auto minute = date::floor<std::chrono::minutes>(t);
  if (minute != t) return false;
  const auto local = tz.to_local(minute);
  const date::local_days day = date::floor<date::days>(local);
  const date::year_month_day ymd{day};
  const auto hour = static_cast<std::size_t>((local - day) / 1h);
  const auto min = static_cast<std::size_t>((local - date::floor<std::chrono::hours>(local)) / 1min);
  const auto& f = cron.fields();
  const bool matches = f.minutes.test(min) && f.hours.test(hour) &&
                       cron.matches_day(static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                                        date::weekday{day}.c_encoding());
  if (!matches) {  // only a collapsed gap minute: `t` starts a transition that moves clocks forward
    const date::sys_info info = tz.get_info(minute);
    return info.begin == minute && tz.get_info(minute - 1s).offset < info.offset;
  }
  const date::local_info info = tz.get_info(date::local_seconds{local});
  if (info.result == date::local_info::ambiguous) {
    return minute == date::sys_seconds{local.time_since_epoch() - info.first.offset};
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<CronExpression> parsed;
  try {
    parsed = CronExpression::parse(text);
  } catch (const durable::InvalidCronExpression&) {
    return 0;
  }
  const CronExpression& cron = *parsed;
  // text() (trimmed) parses again to the same fields.
  const CronExpression again = CronExpression::parse(cron.text());
  FUZZ_ASSERT(again.text() == cron.text());
  FUZZ_ASSERT(again.fields().minutes == cron.fields().minutes && again.fields().hours == cron.fields().hours &&
              again.fields().days_of_month == cron.fields().days_of_month &&
              again.fields().months == cron.fields().months &&
              again.fields().days_of_week == cron.fields().days_of_week);

  for (const char* zone : zones) {
    const CronCalendar calendar(cron, zone);  // takes the expression by value: one per input
    const date::time_zone& tz = *date::locate_zone(zone);
    for (const TimePoint t : instants) {
      const TimePoint next = calendar.next_after(t);
      FUZZ_ASSERT(next > t);
      FUZZ_ASSERT(is_fire_instant(cron, tz, next));
      const TimePoint previous = calendar.previous_before(next);
      FUZZ_ASSERT(previous < next);
      FUZZ_ASSERT(is_fire_instant(cron, tz, previous));
      // Holds with DST too: next_after(x) is the least fire instant after x, and the skipped minutes
      // of a gap all collapse onto one instant, so no fire lies strictly between previous and next.
      FUZZ_ASSERT(calendar.next_after(previous) == next);
      FUZZ_ASSERT(!calendar.format(next).empty());
    }
  }
  return 0;
}
