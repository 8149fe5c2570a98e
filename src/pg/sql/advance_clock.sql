-- Moves the clock on by $1 milliseconds (fragments/move_clock.sql).
{{advance_clock}}
