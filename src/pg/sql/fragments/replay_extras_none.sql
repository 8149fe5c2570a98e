-- commit_replay_plain's stand-in for fragments/replay_extras.sql: nothing to do, nothing refused.
-- It names the parameters those CTEs read, so that both statements take the same ones.
extras_n AS (SELECT 0 AS notified, $17::jsonb AS received, $18::jsonb AS published, $19::text AS events_channel,
                    $20::jsonb AS children, $21::text AS workflows_channel, $22::jsonb AS dropped,
                    $23::boolean AS delivers_cancel),
extras_refused AS (SELECT false AS refused)
