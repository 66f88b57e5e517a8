-- Extends the lease, only for the holder of the token.
-- ARGV[1]  the holder's token        ARGV[2]  the new lease length in ms
-- Returns 1 when extended, 0 when the lock is not held by this token.
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'renewals', 1)
return 1
