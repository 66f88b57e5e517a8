-- --compat redisson: looks at what Redisson's RLock keeps at NAME, taking
-- nothing. Redisson (RedissonLock.java) keeps a hash at NAME, one field
-- "<client id>:<thread id>" holding the hold count, with a PEXPIRE lease.
-- KEYS[1]  NAME
-- Returns {type, pttl, now_ms, field...}: the key's TYPE ('none' when
-- free), its PTTL (-2 when not a hash), the server's clock, and the
-- hash's fields (its holders).
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' then
  return {kind, -2, now_ms}
end
local reply = {kind, redis.call('PTTL', KEYS[1]), now_ms}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  table.insert(reply, field)
end
return reply
