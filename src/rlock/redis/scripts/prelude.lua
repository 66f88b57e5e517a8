-- Shared by the lock scripts, prepended at build time. Every script gets the
-- same KEYS:
--   KEYS[1]  the lock: a hash of the holder that expires with the lease
--   KEYS[2]  the last fence issued: lives until the server's clock has
--            passed it, plus a second (see acquire.lua)
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

-- How long the fence key outlives the moment the server's clock passes the
-- fence it holds.
local fence_keep_ms = 1000

-- Records `fence` as the last fence issued, kept until the server's clock
-- has passed it, plus fence_keep_ms.
local function store_fence(fence)
  local keep_ms = math.max(math.ceil((fence - now_us) / 1000), 0) + fence_keep_ms
  redis.call('SET', KEYS[2], string.format('%d', fence),
    'PX', string.format('%d', keep_ms))
end

-- Removes a waiter from the queue.
local function leave_queue(token)
  redis.call('ZREM', KEYS[3], token)
  redis.call('ZREM', KEYS[4], token)
end

-- Returns the first waiter in the queue that is still alive, its expiry, and
-- the waiters ahead of it that stopped refreshing their entry. It writes
-- nothing: Redis over maxmemory refuses a script only at its first write, and
-- only if that write can grow memory, so a ZREM here would let a whole
-- acquire through. The caller removes the dead ones with forget() after its
-- own first write.
local function live_head()
  local dead = {}
  local index = 0
  while true do
    local head = redis.call('ZRANGE', KEYS[3], index, index)[1]
    if not head then
      return nil, nil, dead
    end
    local expiry = tonumber(redis.call('ZSCORE', KEYS[4], head))
    if expiry and expiry > now_ms then
      return head, expiry, dead
    end
    dead[#dead + 1] = head
    index = index + 1
  end
end

-- Takes the waiters live_head() found dead out of the queue.
local function forget(dead)
  for _, token in ipairs(dead) do
    leave_queue(token)
  end
end

-- Wakes whoever may take the free lock now: the queue's head only (no
-- thundering herd), or everyone waiting outside the queue when it is empty.
-- channel_prefix is "<prefix>{NAME}:".
local function wake_next(channel_prefix)
  local head, _, dead = live_head()
  forget(dead)
  if head then
    redis.call('PUBLISH', channel_prefix .. 'wake:' .. head, 'free')
  else
    redis.call('PUBLISH', channel_prefix .. 'released', 'free')
  end
end

-- The reply of acquire.lua and peek.lua while the lock is held, in the one
-- order both share: {0, retry_ms (the lease's PTTL), "user@host:pid",
-- command, place in the queue (0 outside it), holder_ttl_ms, held_ms}.
local function held_reply(place)
  local holder = redis.call('HMGET', KEYS[1], 'user', 'host', 'pid', 'command', 'ttl_ms', 'acquired_ms')
  local who = (holder[1] or '?') .. '@' .. (holder[2] or '?') .. ':' .. (holder[3] or '?')
  local held_ms = now_ms - (tonumber(holder[6]) or now_ms)
  return {0, redis.call('PTTL', KEYS[1]), who, holder[4] or '', place, tonumber(holder[5]) or 0, held_ms}
end
