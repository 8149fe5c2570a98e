-- The names of the paused types, each with its kind ('workflow' or 'activity'): what an engine
-- keeps a copy of (src/base/paused_types.hpp).
SELECT kind, name FROM {{s}}.paused_types
