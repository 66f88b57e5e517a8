-- Extends the lease, only for the holder of the token.
-- ARGV[1]  the holder's token
-- ARGV[2]  the new lease length in ms; 0 for the one it was taken with
-- Returns 1 when extended, 0 when the lock is not held by this token.
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return 0
end
local ttl = ARGV[2]
if ttl == '0' then
  ttl = redis.call('HGET', KEYS[1], 'ttl_ms')
else
  redis.call('HSET', KEYS[1], 'ttl_ms', ttl)
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('HINCRBY', KEYS[1], 'renewals', 1)
return 1
