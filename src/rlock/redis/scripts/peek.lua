-- Looks at the lock without taking it (rlock wait).
-- Returns {1} when it is free; {0, pttl_ms, "user@host:pid", command,
-- held_ms, holder_ttl_ms} while it is held.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {1}
end
local holder = redis.call('HMGET', KEYS[1], 'user', 'host', 'pid', 'command', 'ttl_ms', 'acquired_ms')
local who = (holder[1] or '?') .. '@' .. (holder[2] or '?') .. ':' .. (holder[3] or '?')
local held_ms = now_ms - (tonumber(holder[6]) or now_ms)
return {0, redis.call('PTTL', KEYS[1]), who, holder[4] or '', held_ms, tonumber(holder[5]) or 0}
