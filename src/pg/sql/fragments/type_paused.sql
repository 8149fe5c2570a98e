-- Whether the {{kind}} type named {{name}} is paused (paused_types).
EXISTS (SELECT 1 FROM {{s}}.paused_types p WHERE p.kind = '{{kind}}' AND p.name = {{name}})
