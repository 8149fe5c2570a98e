// Cron expressions, and the instants one fires at when read in an IANA time zone.
//
// Five fields, `minute hour day-of-month month day-of-week`, each `*`, a value, a range
// `a-b`, a step `*/n`, `a-b/n` or `a/n`, or a comma-separated list of these; months and
// weekdays also by name (`JAN`, `MON`, any case); weekday 0 and 7 are both Sunday. When
// both day fields are restricted, a day matches either (classic cron). Shorthands: `@hourly`,
// `@daily` (`@midnight`), `@weekly`, `@monthly`, `@yearly` (`@annually`).
//
// Daylight saving time: a local time that a transition skips fires at the first valid
// instant after it (02:30 on a spring-forward night fires at 03:00); a local time that a
// transition repeats fires once, at its first occurrence.
#pragma once

#include <bitset>
#include <chrono>
#include <memory>
#include <string>

namespace durable {

class CronExpression {
 public:
  // Which values each field allows, after parsing. Bit i is value i (days and months
  // from 1, weekdays 0 = Sunday .. 6).
  struct Fields {
    std::bitset<60> minutes;
    std::bitset<24> hours;
    std::bitset<32> days_of_month;
    std::bitset<13> months;
    std::bitset<7> days_of_week;
    bool any_day_of_month = true;  // the field was `*` (or `*/n`): only the other day field decides
    bool any_day_of_week = true;
  };

  // Throws InvalidCronExpression naming the field, the value and the rule it breaks, also
  // for an expression that can never fire (e.g. `0 0 30 2 *`).
  static CronExpression parse(const std::string& text);

  const std::string& text() const { return text_; }
  const Fields& fields() const { return fields_; }

  // Whether the expression fires on this civil date (month 1-12, weekday 0 = Sunday).
  bool matches_day(unsigned month, unsigned day, unsigned weekday) const;

 private:
  CronExpression(std::string text, Fields fields) : text_(std::move(text)), fields_(fields) {}
  std::string text_;
  Fields fields_;
};

// A cron expression read in a time zone: the instants it fires at.
class CronCalendar {
 public:
  using TimePoint = std::chrono::system_clock::time_point;

  // Throws UnknownTimeZone for a name the system's time zone database does not know.
  CronCalendar(CronExpression cron, const std::string& time_zone);
  ~CronCalendar();
  CronCalendar(const CronCalendar&);
  CronCalendar& operator=(const CronCalendar&);

  // The first fire instant strictly after `t` (whole seconds).
  TimePoint next_after(TimePoint t) const;
  // The last fire instant strictly before `t`.
  TimePoint previous_before(TimePoint t) const;
  // `t` as local time in this zone, ISO-8601 with its UTC offset: "2026-03-08T03:00:00-04:00".
  std::string format(TimePoint t) const;

  const CronExpression& cron() const { return cron_; }
  const std::string& time_zone() const { return time_zone_; }

 private:
  struct Zone;
  CronExpression cron_;
  std::string time_zone_;
  std::unique_ptr<Zone> zone_;
};

}  // namespace durable
