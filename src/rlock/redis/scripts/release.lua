-- Deletes the lock, only for the holder of the token (compare-and-delete),
-- and wakes the next waiter.
-- ARGV[1]  the holder's token        ARGV[2]  the channel prefix
-- Returns 1 when released, 0 when the lock is not held by this token.
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
wake_next(ARGV[2])
return 1
