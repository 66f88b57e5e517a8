-- --compat string and shedlock: deletes the key only when it holds this
-- holder's value (compare-and-DEL), then wakes one rlock waiter (the
-- libraries' own waiters poll) and tells rlock wait.
-- KEYS[1]  the application's key
-- KEYS[2]  rlock's wake-up list beside it
-- ARGV[1]  the holder's token
-- ARGV[2]  'quiet' to wake nobody
-- ARGV[3]  rlock's release channel for the key
-- Returns 1 when released, 0 when the key did not hold the value.
-- True when `value` is the holder's: the token itself, or a value that
-- ends in ':' and the token (ShedLock's "ADDED:<instant>@<host>:<token>").
local function holds(value, token)
  return value == token
      or (#token > 0 and value and string.sub(value, -(#token + 1)) == ':' .. token)
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string'
    or not holds(redis.call('GET', KEYS[1]), ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
if ARGV[2] ~= 'quiet' then
  -- One element at most: a release wakes one waiter; a wake-up nobody
  -- takes goes after 10 s.
  redis.call('DEL', KEYS[2])
  redis.call('LPUSH', KEYS[2], '1')
  redis.call('PEXPIRE', KEYS[2], 10000)
  redis.call('PUBLISH', ARGV[3], '1')
end
return 1
