-- --compat string and shedlock: extends the lease when the key still holds
-- this holder's value (compare-and-PEXPIRE), as redis-py's extend does.
-- KEYS[1]  the application's key
-- ARGV[1]  the holder's token
-- ARGV[2]  the lease in ms
-- ARGV[3]  'exact': the lease ends ARGV[2] from now; 'at_least': only ever
--          lengthened
-- Returns the PTTL found before extending (-1: no expiry), -2 when the key
-- no longer holds the value (not held).
-- True when `value` is the holder's: the token itself, or a value that
-- ends in ':' and the token (ShedLock's "ADDED:<instant>@<host>:<token>").
local function holds(value, token)
  return value == token
      or (#token > 0 and value and string.sub(value, -(#token + 1)) == ':' .. token)
end
if redis.call('TYPE', KEYS[1])['ok'] ~= 'string'
    or not holds(redis.call('GET', KEYS[1]), ARGV[1]) then
  return -2
end
local before = redis.call('PTTL', KEYS[1])
if ARGV[3] == 'at_least' and (before == -1 or before >= tonumber(ARGV[2])) then
  return before
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return before
