-- Takes the lock when it is free, in one atomic step.
-- KEYS[1]  the lock: a hash that expires with the lease
-- KEYS[2]  the fencing counter: never expires, so fences keep increasing
--          across releases and expiries
-- ARGV[1]  the holder's token        ARGV[2]  the lease length in ms
-- ARGV[3]  host   ARGV[4]  pid   ARGV[5]  user   ARGV[6]  command line
-- Returns {1, fence} when acquired; {0, pttl_ms, "user@host:pid", command}
-- when someone else holds it (pttl_ms is -1 for a key without expiry).
if redis.replicate_commands then
  pcall(redis.replicate_commands)
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  local holder = redis.call('HMGET', KEYS[1], 'user', 'host', 'pid', 'command')
  local who = (holder[1] or '?') .. '@' .. (holder[2] or '?') .. ':' .. (holder[3] or '?')
  return {0, redis.call('PTTL', KEYS[1]), who, holder[4] or ''}
end
local fence = redis.call('INCR', KEYS[2])
local now = redis.call('TIME')
local acquired_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('HSET', KEYS[1],
  'token', ARGV[1], 'fence', fence, 'ttl_ms', ARGV[2],
  'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6],
  'acquired_ms', string.format('%d', acquired_ms), 'renewals', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, fence}
