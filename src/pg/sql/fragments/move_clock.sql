-- Sets the clock's skew to {{skew}} (an expression of the old skew and $1). A skip is not time a
-- running attempt or replay spent: their live leases, and the holds of bodies still running, move
-- with the clock (an attempt's timeout counts real time too), so a body running across a jump is
-- neither timed out nor taken over. Due times stay: they come due. (The test kit's time skipping.)
WITH old AS (SELECT now() + skew AS now, skew FROM {{s}}.clock),
new AS (UPDATE {{s}}.clock SET skew = {{skew}} RETURNING skew),
shift AS (SELECT old.now, new.skew - old.skew AS by FROM old, new),
t AS (UPDATE {{s}}.tasks k SET lease_until = k.lease_until + shift.by FROM shift
      WHERE k.status IN ('running', 'cancelled') AND k.lease_until >= shift.now),
w AS (UPDATE {{s}}.workflows o SET lease_until = o.lease_until + shift.by FROM shift
      WHERE o.status = 'running' AND o.lease_until >= shift.now),
l AS (UPDATE {{s}}.idempotency_locks h SET held_until = h.held_until + shift.by FROM shift
      WHERE h.held_until >= shift.now)
SELECT 1
