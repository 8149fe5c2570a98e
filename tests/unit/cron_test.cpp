#include <date/date.h>
#include <catch2/catch.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <durable/cron.hpp>
#include <durable/errors.hpp>
#include "support/expect.hpp"

using namespace durable;
using durable::test::expect_throw;
using TimePoint = CronCalendar::TimePoint;

namespace {

// "2026-03-08T07:00:00Z" -> instant. Tests write instants in UTC so DST cases read unambiguously.
// (sscanf, not date::parse: g++ 12 -O2 reports a false maybe-uninitialized inside date::parse.)
TimePoint at(const std::string& iso) {
  int year = 0;
  unsigned month = 0, day = 0;
  int hour = 0, minute = 0, second = 0;
  char zulu = 0;
  if (std::sscanf(iso.c_str(), "%d-%u-%uT%d:%d:%d%c", &year, &month, &day, &hour, &minute, &second, &zulu) != 7 ||
      zulu != 'Z') {
    throw std::invalid_argument("bad test instant: " + iso);
  }
  return date::sys_days{date::year{year} / month / day} + std::chrono::hours{hour} + std::chrono::minutes{minute} +
         std::chrono::seconds{second};
}

std::string utc(TimePoint t) { return date::format("%FT%TZ", date::floor<std::chrono::seconds>(t)); }

template <std::size_t N>
std::vector<unsigned> values(const std::bitset<N>& bits) {
  std::vector<unsigned> out;
  for (std::size_t i = 0; i < N; ++i) {
    if (bits.test(i)) out.push_back(static_cast<unsigned>(i));
  }
  return out;
}

std::vector<unsigned> range(unsigned first, unsigned last) {
  std::vector<unsigned> out;
  for (unsigned v = first; v <= last; ++v) out.push_back(v);
  return out;
}

// The values every field allows, as lists, so a mismatch prints readably.
struct Expanded {
  std::vector<unsigned> minutes, hours, days_of_month, months, days_of_week;
  bool any_day_of_month = true;
  bool any_day_of_week = true;
};

Expanded expand(const CronExpression& cron) {
  const CronExpression::Fields& f = cron.fields();
  return {values(f.minutes),      values(f.hours),    values(f.days_of_month), values(f.months),
          values(f.days_of_week), f.any_day_of_month, f.any_day_of_week};
}

void check_same(const Expanded& actual, const Expanded& expected) {
  CHECK(actual.minutes == expected.minutes);
  CHECK(actual.hours == expected.hours);
  CHECK(actual.days_of_month == expected.days_of_month);
  CHECK(actual.months == expected.months);
  CHECK(actual.days_of_week == expected.days_of_week);
  CHECK(actual.any_day_of_month == expected.any_day_of_month);
  CHECK(actual.any_day_of_week == expected.any_day_of_week);
}

const std::vector<unsigned> all_minutes = range(0, 59), all_hours = range(0, 23), all_days = range(1, 31),
                            all_months = range(1, 12), all_weekdays = range(0, 6);

}  // namespace

TEST_CASE("cron: valid expressions parse into the values each field allows", "[unit][cron]") {
  struct Row {
    std::string expression;
    Expanded expected;
  };
  const std::vector<Row> rows = {
      {"* * * * *", {all_minutes, all_hours, all_days, all_months, all_weekdays, true, true}},
      {"*/15 * * * *", {{0, 15, 30, 45}, all_hours, all_days, all_months, all_weekdays, true, true}},
      {"5/20 * * * *", {{5, 25, 45}, all_hours, all_days, all_months, all_weekdays, true, true}},
      {"1,2,10-12,30-40/5 * * * *",
       {{1, 2, 10, 11, 12, 30, 35, 40}, all_hours, all_days, all_months, all_weekdays, true, true}},
      {"0 9-17/2 * * MON-FRI", {{0}, {9, 11, 13, 15, 17}, all_days, all_months, {1, 2, 3, 4, 5}, true, false}},
      {"0 0 * JAN,jul *", {{0}, {0}, all_days, {1, 7}, all_weekdays, true, true}},
      {"0 0 * * 7", {{0}, {0}, all_days, all_months, {0}, true, false}},
      {"0 0 * * 5-7", {{0}, {0}, all_days, all_months, {0, 5, 6}, true, false}},
      {"0 0 * * sun,Sat", {{0}, {0}, all_days, all_months, {0, 6}, true, false}},
      {"0 0 1-31/10 Dec *", {{0}, {0}, {1, 11, 21, 31}, {12}, all_weekdays, false, true}},
      {"0 0 */10 * *", {{0}, {0}, {1, 11, 21, 31}, all_months, all_weekdays, true, true}},
      {"0 0 29 2 *", {{0}, {0}, {29}, {2}, all_weekdays, false, true}},
      {"0 0 13 * 5", {{0}, {0}, {13}, all_months, {5}, false, false}},
      {"59 23 31 12 6", {{59}, {23}, {31}, {12}, {6}, false, false}},
  };
  for (const Row& row : rows) {
    INFO(row.expression);
    check_same(expand(CronExpression::parse(row.expression)), row.expected);
  }
}

TEST_CASE("cron: shorthands equal their expansions, in any case", "[unit][cron]") {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"@hourly", "0 * * * *"},  {"@daily", "0 0 * * *"},  {"@midnight", "0 0 * * *"}, {"@weekly", "0 0 * * 0"},
      {"@monthly", "0 0 1 * *"}, {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@DAILY", "0 0 * * *"},
  };
  for (const auto& [shorthand, expansion] : rows) {
    INFO(shorthand);
    const CronExpression cron = CronExpression::parse(shorthand);
    CHECK(cron.text() == shorthand);
    check_same(expand(cron), expand(CronExpression::parse(expansion)));
  }
}

TEST_CASE("cron: surrounding whitespace is ignored and text() is the trimmed expression", "[unit][cron]") {
  CHECK(CronExpression::parse("  0 12  *\t* *\n").text() == "0 12  *\t* *");
  CHECK(CronExpression::parse(" @weekly ").text() == "@weekly");
  CHECK(expand(CronExpression::parse("  0 12  *\t* *\n")).hours == std::vector<unsigned>{12});
}

TEST_CASE("cron: invalid expressions name the field and the rule", "[unit][cron]") {
  struct Row {
    std::string expression;
    std::string field;
    std::string rule;
  };
  const std::vector<Row> rows = {
      {"0 * * *", "found 4 fields, expected 5", "minute hour day-of-month month day-of-week"},
      {"0 * * * * *", "found 6 fields, expected 5", "or a shorthand such as @daily"},
      {"", "the expression is empty", "5 fields"},
      {"61 * * * *", "minute field '61'", "61 is out of range 0-59"},
      {"* 24 * * *", "hour field '24'", "24 is out of range 0-23"},
      {"* * 0 * *", "day-of-month field '0'", "0 is out of range 1-31"},
      {"* * * 13 *", "month field '13'", "13 is out of range 1-12"},
      {"* * * * 8", "day-of-week field '8'", "8 is out of range 0-7"},
      {"99999999999 * * * *", "minute field '99999999999'", "is out of range 0-59"},
      {"*/0 * * * *", "minute field '*/0'", "a step must be at least 1"},
      {"*/x * * * *", "minute field '*/x'", "the step 'x' is not a number"},
      {"*/60 * * * *", "minute field '*/60'", "the step 60 is larger than the field's range 0-59"},
      {"5-1 * * * *", "minute field '5-1'", "the range '5-1' runs backwards: write the smaller value first"},
      {"* * * * FRI-MON", "day-of-week field 'FRI-MON'", "runs backwards"},
      {"1,,2 * * * *", "minute field '1,,2'", "empty item"},
      {"1, * * * *", "minute field '1,'", "empty item"},
      {"1- * * * *", "minute field '1-'", "a value is missing"},
      {"x * * * *", "minute field 'x'", "'x' is not a number: use 0-59"},
      {"* MON * * *", "hour field 'MON'", "'MON' is not a number"},
      {"* * * FOO *", "month field 'FOO'", "not a number or a month name: use 1-12 or JAN-DEC"},
      {"* * * * Funday", "day-of-week field 'Funday'", "use 0-7 or SUN-SAT"},
      {"0 0 30 2 *", "day-of-month field '30' and month field '2'", "never fires"},
      {"0 0 31 4,6,9,11 *", "day-of-month field '31' and month field '4,6,9,11'", "never fires"},
      {"@reboot", "unknown shorthand", "@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly"},
  };
  for (const Row& row : rows) {
    INFO(row.expression);
    expect_throw<InvalidCronExpression>([&] { CronExpression::parse(row.expression); },
                                        "cron expression '" + row.expression + "': ", row.field, row.rule);
  }
  // Only whitespace is empty too; the message quotes the trimmed expression.
  expect_throw<InvalidCronExpression>([] { CronExpression::parse(" \t "); },
                                      "cron expression '': the expression is empty");
}

TEST_CASE("cron: restricted day fields widen each other, a '*' day field leaves the other to decide", "[unit][cron]") {
  // April 2026: the 3rd and 10th are Fridays, the 13th is a Monday.
  const CronExpression either = CronExpression::parse("0 0 13 * 5");
  CHECK(either.matches_day(4, 13, 1));
  CHECK(either.matches_day(4, 3, 5));
  CHECK_FALSE(either.matches_day(4, 14, 2));
  const CronExpression only_weekday = CronExpression::parse("0 0 * * 5");
  CHECK(only_weekday.matches_day(4, 3, 5));
  CHECK_FALSE(only_weekday.matches_day(4, 13, 1));
  const CronExpression stepped_days = CronExpression::parse("0 0 */2 * 5");  // `*/2` counts as `*`: both must match
  CHECK(stepped_days.matches_day(4, 3, 5));
  CHECK_FALSE(stepped_days.matches_day(4, 10, 5));
  CHECK_FALSE(stepped_days.matches_day(4, 13, 1));
  const CronExpression february = CronExpression::parse("0 0 * 2 *");
  CHECK(february.matches_day(2, 29, 4));
  CHECK_FALSE(february.matches_day(3, 1, 0));
}

namespace {
struct NextRow {
  std::string expression;
  std::string zone;
  std::string from;
  std::string expected;
};

void check_next(const std::vector<NextRow>& rows) {
  for (const NextRow& row : rows) {
    INFO(row.expression << " in " << row.zone << " after " << row.from);
    const CronCalendar calendar(CronExpression::parse(row.expression), row.zone);
    CHECK(utc(calendar.next_after(at(row.from))) == row.expected);
  }
}
}  // namespace

TEST_CASE("cron: next_after in UTC", "[unit][cron]") {
  check_next({
      {"0 * * * *", "UTC", "2026-05-05T10:15:00Z", "2026-05-05T11:00:00Z"},
      {"*/15 * * * *", "UTC", "2026-05-05T10:15:00Z", "2026-05-05T10:30:00Z"},  // strictly after
      {"*/15 * * * *", "UTC", "2026-05-05T10:14:59Z", "2026-05-05T10:15:00Z"},
      {"0 0 1 * *", "UTC", "2026-01-31T12:00:00Z", "2026-02-01T00:00:00Z"},
      {"0 0 1 * *", "UTC", "2026-12-15T00:00:00Z", "2027-01-01T00:00:00Z"},
      {"59 23 31 12 *", "UTC", "2026-06-01T00:00:00Z", "2026-12-31T23:59:00Z"},
      {"0 0 29 2 *", "UTC", "2026-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
      {"0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", "2104-02-29T00:00:00Z"},  // 2100 is no leap year
      {"0 0 13 * 5", "UTC", "2026-04-01T00:00:00Z", "2026-04-03T00:00:00Z"},  // a Friday
      {"0 0 13 * 5", "UTC", "2026-04-10T00:00:00Z", "2026-04-13T00:00:00Z"},  // the 13th, a Monday
      {"0 0 13 * 5", "UTC", "2026-04-13T00:00:00Z", "2026-04-17T00:00:00Z"},
      {"@weekly", "UTC", "2026-04-01T12:00:00Z", "2026-04-05T00:00:00Z"},
      {"0 9-17/2 * * MON-FRI", "UTC", "2026-04-03T17:30:00Z", "2026-04-06T09:00:00Z"},
      {"0 0 * JAN,jul *", "UTC", "2026-01-31T00:00:00Z", "2026-07-01T00:00:00Z"},
      {"0 0 */31 2 1", "UTC", "2026-01-01T00:00:00Z", "2027-02-01T00:00:00Z"},  // Feb 1 on a Monday
  });
  // Sub-second instants: strictly after still means the next whole fire minute.
  const CronCalendar every_minute(CronExpression::parse("* * * * *"), "UTC");
  CHECK(utc(every_minute.next_after(at("2026-05-05T10:15:00Z") + std::chrono::milliseconds{500})) ==
        "2026-05-05T10:16:00Z");
  CHECK(utc(every_minute.next_after(at("2026-05-05T10:15:00Z") - std::chrono::milliseconds{1})) ==
        "2026-05-05T10:15:00Z");
}

TEST_CASE("cron: next_after in a zone offset from UTC", "[unit][cron]") {
  check_next({
      {"0 9 * * *", "America/New_York", "2026-01-10T00:00:00Z", "2026-01-10T14:00:00Z"},  // EST
      {"0 9 * * *", "America/New_York", "2026-07-10T00:00:00Z", "2026-07-10T13:00:00Z"},  // EDT
      {"0 9 * * *", "Asia/Kolkata", "2026-07-10T00:00:00Z", "2026-07-10T03:30:00Z"},      // +05:30
  });
}

namespace {
// The fire instants in UTC, each the next after the one before, starting after `from`.
std::vector<std::string> fires(const std::string& expression, const std::string& zone, const std::string& from,
                               std::size_t count) {
  const CronCalendar calendar(CronExpression::parse(expression), zone);
  std::vector<std::string> out;
  TimePoint t = at(from);
  for (std::size_t i = 0; i < count; ++i) {
    t = calendar.next_after(t);
    out.push_back(utc(t));
  }
  return out;
}
using Strings = std::vector<std::string>;
}  // namespace

TEST_CASE("cron: a local time skipped by spring-forward fires at the first instant after the gap", "[unit][cron]") {
  // New York, Sunday 2026-03-08: 02:00 EST becomes 03:00 EDT (07:00Z).
  CHECK(fires("30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 3) ==
        Strings{"2026-03-07T07:30:00Z", "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"});
  // All four skipped quarter hours collapse onto one fire.
  CHECK(fires("*/15 2 * * *", "America/New_York", "2026-03-08T06:00:00Z", 3) ==
        Strings{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:15:00Z"});
  CHECK(fires("*/15 2 * * *", "America/New_York", "2026-03-07T07:45:00Z", 2) ==
        Strings{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"});
  // Minutes after the gap are not repeated by the collapsed fire.
  CHECK(fires("*/30 * * * *", "America/New_York", "2026-03-08T06:15:00Z", 4) ==
        Strings{"2026-03-08T06:30:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:00:00Z"});
  // Berlin, Sunday 2026-03-29: 02:00 CET becomes 03:00 CEST (01:00Z).
  CHECK(fires("30 2 * * *", "Europe/Berlin", "2026-03-28T00:00:00Z", 3) ==
        Strings{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"});
}

TEST_CASE("cron: a local time repeated by fall-back fires once, at its first occurrence", "[unit][cron]") {
  // New York, Sunday 2026-11-01: 02:00 EDT becomes 01:00 EST (06:00Z), so 01:30 happens twice.
  CHECK(fires("30 1 * * *", "America/New_York", "2026-10-31T00:00:00Z", 3) ==
        Strings{"2026-10-31T05:30:00Z", "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"});
  const CronCalendar calendar(CronExpression::parse("30 1 * * *"), "America/New_York");
  CHECK(utc(calendar.next_after(at("2026-11-01T05:30:00Z"))) != "2026-11-01T06:30:00Z");
  // From inside the second pass through 01:xx, the repeated 01:30 is not fired again.
  CHECK(utc(calendar.next_after(at("2026-11-01T06:10:00Z"))) == "2026-11-02T06:30:00Z");
  // Berlin, Sunday 2026-10-25: 03:00 CEST becomes 02:00 CET (01:00Z).
  CHECK(fires("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2) ==
        Strings{"2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"});
}

TEST_CASE("cron: previous_before is the last fire strictly before", "[unit][cron]") {
  struct Row {
    std::string expression;
    std::string zone;
    std::string before;
    std::string expected;
  };
  const std::vector<Row> rows = {
      {"0 * * * *", "UTC", "2026-05-05T11:00:00Z", "2026-05-05T10:00:00Z"},
      {"0 * * * *", "UTC", "2026-05-05T11:00:01Z", "2026-05-05T11:00:00Z"},
      {"* * * * *", "UTC", "2026-05-05T11:00:00Z", "2026-05-05T10:59:00Z"},
      {"30 9 * * *", "UTC", "2026-05-05T08:00:00Z", "2026-05-04T09:30:00Z"},
      {"0 0 29 2 *", "UTC", "2028-03-01T00:00:00Z", "2028-02-29T00:00:00Z"},
      {"0 0 29 2 *", "UTC", "2028-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
      {"@yearly", "UTC", "2026-06-01T00:00:00Z", "2026-01-01T00:00:00Z"},
      {"@yearly", "UTC", "2026-01-01T00:00:00Z", "2025-01-01T00:00:00Z"},
      {"30 2 * * *", "America/New_York", "2026-03-08T12:00:00Z", "2026-03-08T07:00:00Z"},
      {"30 1 * * *", "America/New_York", "2026-11-01T07:00:00Z", "2026-11-01T05:30:00Z"},
  };
  for (const Row& row : rows) {
    INFO(row.expression << " in " << row.zone << " before " << row.before);
    const CronCalendar calendar(CronExpression::parse(row.expression), row.zone);
    CHECK(utc(calendar.previous_before(at(row.before))) == row.expected);
  }
}

TEST_CASE("cron: previous_before and next_after agree around DST transitions", "[unit][cron]") {
  const CronCalendar calendar(CronExpression::parse("*/20 0-3 * * *"), "America/New_York");
  for (const char* from : {"2026-03-08T04:00:00Z", "2026-11-01T04:00:00Z"}) {
    TimePoint t = at(from);
    for (int i = 0; i < 15; ++i) {
      const TimePoint next = calendar.next_after(t);
      INFO(utc(t) << " -> " << utc(next));
      CHECK(next > t);
      CHECK(calendar.previous_before(next + std::chrono::seconds{1}) == next);
      CHECK(calendar.previous_before(next) <= t);
      t = next;
    }
  }
}

TEST_CASE("cron: format shows local time with its UTC offset", "[unit][cron]") {
  const CronCalendar utc_calendar(CronExpression::parse("@daily"), "UTC");
  CHECK(utc_calendar.format(at("2026-11-30T09:00:00Z")) == "2026-11-30T09:00:00+00:00");
  CHECK(utc_calendar.format(at("2026-11-30T09:00:00Z") + std::chrono::milliseconds{999}) ==
        "2026-11-30T09:00:00+00:00");
  const CronCalendar new_york(CronExpression::parse("30 2 * * *"), "America/New_York");
  CHECK(new_york.format(new_york.next_after(at("2026-03-07T12:00:00Z"))) == "2026-03-08T03:00:00-04:00");
  const CronCalendar fall_back(CronExpression::parse("30 1 * * *"), "America/New_York");
  CHECK(fall_back.format(at("2026-11-01T05:30:00Z")) == "2026-11-01T01:30:00-04:00");
  CHECK(fall_back.format(at("2026-11-02T06:30:00Z")) == "2026-11-02T01:30:00-05:00");
  const CronCalendar kolkata(CronExpression::parse("@daily"), "Asia/Kolkata");
  CHECK(kolkata.format(at("2026-07-10T00:00:00Z")) == "2026-07-10T05:30:00+05:30");
}

TEST_CASE("cron: an unknown time zone is rejected with a hint", "[unit][cron]") {
  const CronExpression cron = CronExpression::parse("@daily");
  expect_throw<UnknownTimeZone>([&] { CronCalendar(cron, "Mars/Olympus"); }, "unknown time zone 'Mars/Olympus'",
                                "\"Europe/Berlin\"");
  expect_throw<UnknownTimeZone>([&] { CronCalendar(cron, ""); }, "unknown time zone ''", "IANA name");
}

TEST_CASE("cron: calendars copy and assign", "[unit][cron]") {
  const CronCalendar new_york(CronExpression::parse("30 2 * * *"), "America/New_York");
  const CronCalendar copy(new_york);  // NOLINT(performance-unnecessary-copy-initialization): testing the copy
  CHECK(copy.time_zone() == "America/New_York");
  CHECK(copy.cron().text() == "30 2 * * *");
  CHECK(utc(copy.next_after(at("2026-03-08T00:00:00Z"))) == "2026-03-08T07:00:00Z");
  CronCalendar assigned(CronExpression::parse("@hourly"), "UTC");
  assigned = new_york;
  CHECK(assigned.time_zone() == "America/New_York");
  CHECK(utc(assigned.next_after(at("2026-03-08T00:00:00Z"))) == "2026-03-08T07:00:00Z");
}
