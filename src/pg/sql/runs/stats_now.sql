-- The schema's clock (moved by the test kit's time skipping), for Runs::stats.
SELECT {{s}}.epoch_us(now() + skew) AS now_us FROM {{s}}.clock
