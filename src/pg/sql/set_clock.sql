-- Sets the clock to $1 (us since the epoch) (fragments/move_clock.sql).
{{set_clock}}
