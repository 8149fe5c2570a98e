-- commit_replay for a replay that received no message, published no event, started no child,
-- dropped no task and delivered no cancel (most of them), and does not continue as new: the same
-- parameters, without the statements for those (each costs its share of every execution, even
-- when it writes nothing).
{{replay_commit_plain}}
