-- Deletes the lock whoever holds it (release --force) and wakes the next
-- waiter.
-- ARGV[1]  the channel prefix
-- Returns {} when the lock was free, else {user@host:pid, command, token}
-- of the holder whose lock was broken.
local holder = redis.call('HMGET', KEYS[1], 'user', 'host', 'pid', 'command', 'token')
if redis.call('DEL', KEYS[1]) == 0 then
  return {}
end
wake_next(ARGV[1])
local who = (holder[1] or '?') .. '@' .. (holder[2] or '?') .. ':' .. (holder[3] or '?')
return {who, holder[4] or '', holder[5] or ''}
