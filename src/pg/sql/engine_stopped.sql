
DELETE FROM {{s}}.engines WHERE owner = $1
