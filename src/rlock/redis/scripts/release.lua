-- Deletes the lock, only for the holder of the token (compare-and-delete).
-- KEYS[1]  the lock hash
-- ARGV[1]  the holder's token
-- Returns 1 when released, 0 when the lock is not held by this token.
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
