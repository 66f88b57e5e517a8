-- Takes a waiter that gives up (-w ran out, a signal) out of the queue; if
-- the lock is free, wakes the next waiter, since a wake-up may have been meant
-- for this one.
-- ARGV[1]  the waiter's token        ARGV[2]  the wake-up prefix, "<prefix>{NAME}:"
-- Returns 1.
leave_queue(ARGV[1])
if permit_free() then
  wake_next(ARGV[2], true)
end
return 1
