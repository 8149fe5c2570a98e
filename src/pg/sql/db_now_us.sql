-- Schedules. Times cross as microseconds since the epoch; the cron arithmetic is done in C++.
SELECT {{s}}.epoch_us({{now}}) AS now_us
