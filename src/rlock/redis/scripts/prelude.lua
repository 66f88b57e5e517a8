-- Shared by the lock scripts, prepended at build time. Every script gets the
-- same KEYS:
--   KEYS[1]  the lock: a hash of the holder that expires with the lease
--   KEYS[2]  the fencing counter: never expires
--   KEYS[3]  the wait queue (--fair): zset of waiter token -> arrival (us)
--   KEYS[4]  the queue's liveness: zset of waiter token -> expiry (ms)
--   KEYS[5]  --once-per: the number of the last slot with a successful run
-- (a script may be given only the first few it uses).
if redis.replicate_commands then
  pcall(redis.replicate_commands)
end
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

-- Returns the first waiter in the queue that is still alive, and its expiry;
-- waiters that stopped refreshing their entry leave the queue here.
local function live_head()
  while true do
    local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if not head then
      return nil, nil
    end
    local expiry = tonumber(redis.call('ZSCORE', KEYS[4], head))
    if expiry and expiry > now_ms then
      return head, expiry
    end
    redis.call('ZREM', KEYS[3], head)
    redis.call('ZREM', KEYS[4], head)
  end
end

-- Removes a waiter from the queue.
local function leave_queue(token)
  redis.call('ZREM', KEYS[3], token)
  redis.call('ZREM', KEYS[4], token)
end

-- Wakes whoever may take the free lock now: the queue's head only (no
-- thundering herd), or everyone waiting outside the queue when it is empty.
-- channel_prefix is "<prefix>{NAME}:".
local function wake_next(channel_prefix)
  local head = live_head()
  if head then
    redis.call('PUBLISH', channel_prefix .. 'wake:' .. head, 'free')
  else
    redis.call('PUBLISH', channel_prefix .. 'released', 'free')
  end
end
