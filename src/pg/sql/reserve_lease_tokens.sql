-- A block of $1 lease tokens, never handed out before; the first one. Committed synchronously.
UPDATE {{s}}.lease_token_blocks SET next = next + $1 RETURNING next - $1 AS first
