-- --compat string on a quorum (Redlock): raises rlock's fence counter
-- beside the key (which string_acquire.lua INCRs, kept without expiry) to
-- at least the fence a quorum of servers gave the holder (their maximum),
-- so that the next holder, whose quorum shares a server with this one's,
-- gets a higher one.
-- KEYS[1]  rlock's fence counter beside the application's key
-- ARGV[1]  the fence
-- Returns 1.
local last = tonumber(redis.call('GET', KEYS[1])) or 0
if tonumber(ARGV[1]) > last then
  redis.call('SET', KEYS[1], ARGV[1])
end
return 1
