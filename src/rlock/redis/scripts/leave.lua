-- Takes a waiter that gives up (-w ran out, a signal) out of the queue; if
-- the lock is free, wakes the next waiter, since a wake-up may have been meant
-- for this one.
-- ARGV[1]  the waiter's token
-- Returns 1.
leave_queue(ARGV[1])
if permit_free() then
  wake_next(true)
end
return 1
