-- Redlock: raises this server's fence counter to at least the fence a
-- quorum of servers gave the holder (their maximum), so that the next
-- holder, whose quorum shares a server with this one's, gets a higher one.
-- ARGV[1]  the holder's token: when it holds the lock here, the lock's
--          fence becomes ARGV[2] too, as status shows it
-- ARGV[2]  the fence
-- Returns 1.
local fence = tonumber(ARGV[2])
local last = tonumber(redis.call('GET', KEYS[2])) or 0
if fence > last then
  store_fence(fence)
end
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'fence', ARGV[2])
end
return 1
