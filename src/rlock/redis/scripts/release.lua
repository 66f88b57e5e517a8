-- Deletes the lock, only for the holder of the token (compare-and-delete),
-- and wakes the next waiter.
-- ARGV[1]  the holder's token
-- ARGV[2]  'quiet' to wake nobody: the undo of an acquire that a quorum of
--          servers did not grant (the lock was never held, and waking the
--          waiters would only have them race for it again)
-- Returns 1 when released, 0 when the lock is not held by this token.
-- A semaphore's holder (KEYS[6]) gives back its own permit.
if limit_of_lock() then
  if not holder_expiry(ARGV[1]) then
    return 0
  end
  local outside = waiters_outside()
  drop_holders({ARGV[1]})
  if ARGV[2] ~= 'quiet' then
    wake_next(outside)
  end
  return 1
end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
local outside = waiters_outside()
redis.call('DEL', KEYS[1])
if ARGV[2] ~= 'quiet' then
  wake_next(outside)
end
return 1
