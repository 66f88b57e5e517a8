-- Deletes the lock whoever holds it (release --force) and wakes the next
-- waiter.
-- Returns {} when the lock was free, else {user@host:pid, command, token,
-- how many held it, 1 when they held it shared else 0} of the holder whose
-- lock was broken. A semaphore or a shared lock loses every holder (the one
-- named is the one whose lease would have ended first).
local holder = redis.call('HMGET', KEYS[1], 'user', 'host', 'pid', 'command', 'token')
local count = 1
local shared = limit_of_lock() == k_shared and 1 or 0
if limit_of_lock() then
  count = #live_holders()
  local first = live_holders()[1] or ''
  local key = first .. ':'
  holder = redis.call('HMGET', KEYS[1], key .. 'user', key .. 'host', key .. 'pid', key .. 'command')
  holder[5] = first
  redis.call('DEL', KEYS[6])
end
local outside = waiters_outside()
if redis.call('DEL', KEYS[1]) == 0 then
  return {}
end
wake_next(outside)
local who = (holder[1] or '?') .. '@' .. (holder[2] or '?') .. ':' .. (holder[3] or '?')
return {who, holder[4] or '', holder[5] or '', count, shared}
