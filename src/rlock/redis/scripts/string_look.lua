-- --compat string and shedlock: a look at the key for check, peek and
-- status, or its deletion whoever holds it (release --force).
-- KEYS[1]  the application's key
-- KEYS[2]  rlock's wake-up list beside it
-- ARGV[1]  'look', or 'break' to delete a string key and wake one waiter
-- ARGV[2]  rlock's release channel for the key
-- Returns {type, value, pttl}: type 'none' when free; value only for a
-- string key.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  return {'none'}
end
local pttl = redis.call('PTTL', KEYS[1])
if kind ~= 'string' then
  return {kind, false, pttl}
end
local value = redis.call('GET', KEYS[1])
if ARGV[1] == 'break' then
  redis.call('DEL', KEYS[1])
  redis.call('DEL', KEYS[2])
  redis.call('LPUSH', KEYS[2], '1')
  redis.call('PEXPIRE', KEYS[2], 10000)
  redis.call('PUBLISH', ARGV[2], '1')
end
return {kind, value, pttl}
