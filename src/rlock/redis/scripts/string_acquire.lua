-- --compat string and shedlock: takes a lock kept as one plain string, as
-- the SET-NX family of libraries does (redis-py's Lock, redsync,
-- node-redlock, ShedLock): SET NX PX, and nothing else in the key.
-- KEYS[1]  the application's key (NAME, or job-lock:ENV:NAME)
-- KEYS[2]  rlock's fence counter beside it (same Cluster slot)
-- ARGV[1]  the value to set: the token (ShedLock: its value format)
-- ARGV[2]  the lease in ms
-- Returns {'granted', fence}; {'busy', value, pttl} when the key holds a
-- string (pttl -1: no expiry); {'wrongtype', type} for a key of another
-- type, which is never taken.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'string' then
  return {'wrongtype', kind}
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {'granted', redis.call('INCR', KEYS[2])}
end
return {'busy', redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}
