-- Shared by the lock scripts, prepended at build time. Every script gets the
-- same KEYS:
--   KEYS[1]  the lock: a hash of the holder that expires with the lease
--   KEYS[2]  the last fence issued: lives until the server's clock has
--            passed it, plus a second (see acquire.lua)
--   KEYS[3]  the wait queue (--fair): zset of waiter token -> arrival (us)
--   KEYS[4]  the queue's liveness: zset of waiter token -> expiry (ms)
--   KEYS[5]  --once-per: the number of the last slot with a successful run
--   KEYS[6]  a semaphore's holders: zset of token -> lease expiry (ms,
--            server time); see "Semaphores" below
--   KEYS[7]  the wake-up list: every waiter blocks on it in BLPOP, and a
--            release pushes one wake-up (see wake() below)
--   KEYS[8]  the waiters that passed the current wake-up on: a set of
--            tokens (see pass_wakeup() below)
-- (a script may be given only the first few it uses). A script touches no
-- other key: servers that check (Dragonfly, Kvrocks' strict mode, cloud
-- proxies) refuse a key that is not in KEYS. The release channel is a
-- channel, not a key.
if redis.replicate_commands then
  pcall(redis.replicate_commands)
end
local clock = redis.call('TIME')
local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

-- The release channel, "<prefix>{NAME}:released": rlock wait hears every
-- release there.
local released_channel = KEYS[1] .. ':released'

-- Lua 5.1 has unpack, Lua 5.2 and later (Dragonfly runs 5.4) table.unpack
-- only. make lint refuses a bare call of unpack.
local unpack_list = table.unpack or unpack

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

-- How long a wake-up waits in its list for a waiter to take it.
local wake_keep_ms = 10000

-- Pushes one wake-up onto the wake-up list (KEYS[7]), where every waiter
-- blocks in BLPOP, unless one waits there already. Redis hands it to one
-- connection still blocked (a killed waiter's is gone), or to the next that
-- blocks. Best effort (pcall): while a Cluster slot moves the list may live
-- on the other node, and the waiter's safety net then looks for it.
local function push_wakeup()
  if redis.pcall('LLEN', KEYS[7]) == 0 then
    redis.pcall('RPUSH', KEYS[7], 'free')
  end
  redis.pcall('PEXPIRE', KEYS[7], wake_keep_ms)
end

-- Wakes one waiter for a lock that came free: a new wake-up, which no
-- waiter has passed on yet (KEYS[8]).
local function wake()
  redis.pcall('DEL', KEYS[8])
  push_wakeup()
end

-- A waiter woken for a free lock that the queue's head, not it, may take
-- passes the wake-up on: every waiter blocks on the one list, so the
-- wake-up meant for the head may reach another first. Each waiter passes a
-- wake-up on once (KEYS[8] records who did): the one that passed it does
-- not block again before another waiter could take it, and a head that
-- does not block (stopped) is left to its safety net instead of waiters
-- handing it round in a loop.
local function pass_wakeup(token)
  if redis.pcall('SADD', KEYS[8], token) == 1 then
    redis.pcall('PEXPIRE', KEYS[8], wake_keep_ms)
    push_wakeup()
  end
end

-- Marks the lock as one that waiters outside the queue wait for: a waiter
-- that finds it held, or one that got in after a wait (others may wait
-- still). The mark lives in the lock's hash and goes with it, so a lock
-- nobody waited for leaves no wake-up behind. pcall: over maxmemory a busy
-- answer is still given.
local function mark_waiters()
  redis.pcall('HSET', KEYS[1], 'waiting', 1)
end

-- True when the lock is marked by mark_waiters().
local function waiters_outside()
  return redis.call('HEXISTS', KEYS[1], 'waiting') == 1
end

-- Wakes whoever may take the free lock now: the queue's head (a waiter
-- that takes its wake-up passes it on, see pass_wakeup()), or, when the
-- queue is empty and `outside` (see waiters_outside(), read before the
-- lock's hash went), one of the waiters outside it (no thundering herd);
-- and tells `rlock wait` on the release channel.
local function wake_next(outside)
  local head, _, dead = live_head()
  forget(dead)
  if head or outside then
    wake()
  end
  redis.call('PUBLISH', released_channel, 'free')
end

-- Semaphores: a lock with a limit of N holders. KEYS[1] then holds 'limit'
-- and, for each holder, '<token>:<field>' (the fields below); KEYS[6] scores
-- each holder's token by the end of its lease on the server's clock, so a
-- holder that stopped renewing drops out by itself. Both keys expire with
-- the last lease. Every script looks at live holders only; those whose lease
-- ended are removed after a script's first write (see live_head()).
local holder_fields = {'slot', 'fence', 'ttl_ms', 'host', 'pid', 'user',
  'command', 'acquired_ms', 'renewals'}

-- Shared locks: a lock whose limit is k_shared (-1) has any number of
-- holders, kept as a semaphore's are, and no plain holder while one lives.
-- Writers first: a plain waiter that finds shared holders takes a place in
-- the --fair queue (see acquire.lua), which no newcomer passes.
local k_shared = -1

-- Returns the semaphore's limit (k_shared for a shared lock); nil for a
-- plain lock or a free one.
local function limit_of_lock()
  return tonumber(redis.call('HGET', KEYS[1], 'limit'))
end

-- Returns the holders whose lease has ended (reads only).
local function expired_holders()
  return redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now_ms)
end

-- Returns the holders whose lease runs, the first to end first.
local function live_holders()
  return redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. now_ms, '+inf')
end

-- Returns when `token`'s lease ends (ms), nil when it holds no live permit.
local function holder_expiry(token)
  local expiry = tonumber(redis.call('ZSCORE', KEYS[6], token))
  if expiry and expiry > now_ms then
    return expiry
  end
  return nil
end

-- Takes holders out; a semaphore left without holders is deleted.
local function drop_holders(tokens)
  for _, token in ipairs(tokens) do
    redis.call('ZREM', KEYS[6], token)
    local fields = {}
    for i, field in ipairs(holder_fields) do
      fields[i] = token .. ':' .. field
    end
    redis.call('HDEL', KEYS[1], unpack_list(fields))
  end
  if redis.call('ZCARD', KEYS[6]) == 0 and limit_of_lock() then
    redis.call('DEL', KEYS[1])
  end
end

-- Makes both keys of a semaphore live until the last lease ends: `expiry`
-- for `token`, or another holder's if later.
local function expire_semaphore(token, expiry)
  local last = expiry
  local top = redis.call('ZREVRANGE', KEYS[6], 0, 1, 'WITHSCORES')
  for i = 1, #top, 2 do
    if top[i] ~= token then
      last = math.max(last, tonumber(top[i + 1]))
      break
    end
  end
  local at = string.format('%d', last)
  redis.call('PEXPIREAT', KEYS[1], at)
  redis.call('PEXPIREAT', KEYS[6], at)
end

-- True when a waiter may take the lock now, queue aside: it is free, a
-- semaphore with a permit left, or a shared lock (for shared waiters).
local function permit_free()
  local limit = limit_of_lock()
  if limit then
    return limit == k_shared or #live_holders() < limit
  end
  return redis.call('EXISTS', KEYS[1]) == 0
end

-- A semaphore's busy reply, as held_reply(): the holder named is the one
-- whose lease ends first, and retry_ms is when.
local function semaphore_held_reply(place)
  local shared = limit_of_lock() == k_shared and 1 or 0
  local live = live_holders()
  local first = live[1]
  if not first then
    return {0, 0, '?@?:?', '', place, 0, 0, shared, 0}
  end
  local f = redis.call('HMGET', KEYS[1], first .. ':user', first .. ':host',
    first .. ':pid', first .. ':command', first .. ':ttl_ms', first .. ':acquired_ms')
  local who = (f[1] or '?') .. '@' .. (f[2] or '?') .. ':' .. (f[3] or '?')
  local held_ms = now_ms - (tonumber(f[6]) or now_ms)
  return {0, holder_expiry(first) - now_ms, who, f[4] or '', place,
    tonumber(f[5]) or 0, held_ms, shared, #live}
end

-- The reply of acquire.lua and peek.lua while the lock is held, in the one
-- order both share: {0, retry_ms (the lease's PTTL), "user@host:pid",
-- command, place in the queue (0 outside it), holder_ttl_ms, held_ms,
-- 1 when shared holders hold it else 0, how many hold it}: a semaphore's
-- or shared lock's holder named is the one whose lease ends first.
local function held_reply(place)
  if limit_of_lock() then
    return semaphore_held_reply(place)
  end
  local holder = redis.call('HMGET', KEYS[1], 'user', 'host', 'pid', 'command', 'ttl_ms', 'acquired_ms')
  local who = (holder[1] or '?') .. '@' .. (holder[2] or '?') .. ':' .. (holder[3] or '?')
  local held_ms = now_ms - (tonumber(holder[6]) or now_ms)
  return {0, redis.call('PTTL', KEYS[1]), who, holder[4] or '', place, tonumber(holder[5]) or 0, held_ms, 0, 1}
end
