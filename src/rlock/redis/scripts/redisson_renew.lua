-- --compat redisson: renews our hold on Redisson's RLock at NAME as
-- Redisson's watchdog does (renewal/LockTask.java: HEXISTS, then PEXPIRE).
-- KEYS[1]  NAME
-- ARGV[1]  our field
-- ARGV[2]  the lease in ms
-- ARGV[3]  'exact' (the lease ends ARGV[2] from now) or 'at_least' (only
--          ever lengthened)
-- Returns the PTTL found before (-1: no expiry), -2 when our field is gone.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash'
    or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return -2
end
local before = redis.call('PTTL', KEYS[1])
if ARGV[3] == 'exact' or (before >= 0 and before < tonumber(ARGV[2])) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return before
