-- Takes the lock when it is free and no live waiter is ahead in the queue,
-- in one atomic step; otherwise (with a queue lifetime) joins or refreshes
-- this waiter's place in the queue.
-- ARGV[1]  the holder's token        ARGV[2]  the lease length in ms
-- ARGV[3]  host   ARGV[4]  pid   ARGV[5]  user   ARGV[6]  command line
-- ARGV[7]  queue entry lifetime in ms; 0 to wait outside the queue
-- ARGV[8]  the limit: N for one of N holders of a semaphore, -1 (k_shared)
--          for a shared holder, 0 (or none) for a plain lock
-- ARGV[9]  a waiter's place in the queue outside --fair, in ms: when it
--          finds a queue, has a place already, or asks for a plain hold
--          where shared holders hold (writers first), it joins the queue
--          (or refreshes its place there) for that long, as ARGV[7] does,
--          so that later comers do not pass it and a release wakes it in
--          its turn; 0 (or none) for no place
-- ARGV[10] the token of the run this one is nested in, or empty: when that
--          run holds the lock, a shared request beside its shared hold
--          gets in whoever waits (the parent would otherwise wait for a
--          writer that waits for the parent), and a request its hold
--          excludes takes no place in the queue (it may be waiting for its
--          own parent, and a place would hold everyone else back)
-- ARGV[11] '1' when the request follows a wait: other waiters may wait
--          still, so the lock is marked (see waiters_outside() in
--          prelude.lua) and its release wakes one
-- Returns {1, fence} when acquired ({1, fence, slot} for a semaphore: the
-- lowest index in 0..N-1 no live holder has); {2, limit} when the lock has
-- live holders under another limit (0: a plain lock; plain and shared
-- holders exclude each other instead); otherwise {0, retry_ms,
-- "user@host:pid", command, place, holder_ttl_ms, held_ms, shared, holders}
-- (as peek.lua does, see held_reply in prelude.lua): retry_ms is when to
-- look again at the latest
-- (the lease's PTTL, or the expiry of the waiter ahead; -1 for a lease
-- without expiry), place is the 1-based place in the queue (0 outside it),
-- held_ms how long the holder has held it.
--
-- Every path's first write is one that can grow memory (SET, ZADD), or the
-- path only shrinks it: Redis over maxmemory with noeviction then refuses
-- the script before it changed anything.

-- Returns the next fence: above the last one while its key lives, and the
-- server's clock in microseconds otherwise. The key lives until the clock
-- has passed the fence it holds (store_fence), so a fence taken from the
-- clock is above every earlier one as long as the clock moves forward, even
-- when the key was lost (FLUSHALL, a restart without persistence, a
-- failover to a replica that missed it). Microseconds since the epoch stay
-- below 2^53 until the year 2255: exact in a Lua number and in JSON.
local function next_fence()
  local last = tonumber(redis.call('GET', KEYS[2])) or 0
  local fence = math.max(last + 1, now_us)
  store_fence(fence)
  return fence
end

local token = ARGV[1]
local limit = tonumber(ARGV[8]) or 0
local shared = limit == k_shared
local place_ttl = tonumber(ARGV[9]) or 0
local parent = ARGV[10] or ''
local waited = ARGV[11] == '1'
-- A semaphore all of whose leases ended is free; its keys go once this
-- script has written (see live_head()).
local held_limit = limit_of_lock()
local stale = {}
if held_limit then
  stale = expired_holders()
  if #live_holders() == 0 then
    held_limit = nil
  end
end
local plain_holder = redis.call('HGET', KEYS[1], 'token') or nil
local excludes = held_limit == k_shared and limit == 0
if held_limit and held_limit ~= limit and not excludes then
  return {2, held_limit}
end
if plain_holder and limit > 0 then
  return {2, 0}
end

-- Clears what a semaphore whose leases all ended left in KEYS[1], once a
-- plain holder's fields are written.
local function clear_stale_semaphore()
  if #stale > 0 then
    redis.call('HDEL', KEYS[1], 'limit')
    drop_holders(stale)
  end
end

-- Returns the lowest slot in 0..limit-1 that no live holder has.
local function free_slot()
  local taken = {}
  for _, holder in ipairs(live_holders()) do
    local slot = tonumber(redis.call('HGET', KEYS[1], holder .. ':slot'))
    if slot then
      taken[slot] = true
    end
  end
  local slot = 0
  while taken[slot] do
    slot = slot + 1
  end
  return slot
end

-- Takes a permit of the semaphore, or a shared hold (slot nil).
local function take_permit(fence, slot)
  local key = token .. ':'
  local expiry = now_ms + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'limit', limit,
    key .. 'fence', string.format('%d', fence),
    key .. 'ttl_ms', ARGV[2], key .. 'host', ARGV[3], key .. 'pid', ARGV[4],
    key .. 'user', ARGV[5], key .. 'command', ARGV[6],
    key .. 'acquired_ms', string.format('%d', now_ms), key .. 'renewals', 0)
  if slot then
    redis.call('HSET', KEYS[1], key .. 'slot', slot)
  end
  if waited then
    mark_waiters()
  end
  redis.call('ZADD', KEYS[6], string.format('%d', expiry), token)
  expire_semaphore(token, expiry)
  -- Our own permit from an attempt long ago is the one just written.
  local others = {}
  for _, holder in ipairs(stale) do
    if holder ~= token then
      others[#others + 1] = holder
    end
  end
  drop_holders(others)
end
if limit ~= 0 and holder_expiry(token) then
  -- Our own earlier attempt took a permit and its reply was lost: the lease
  -- starts again now, as the caller counts it.
  local key = token .. ':'
  local own = redis.call('HMGET', KEYS[1], key .. 'fence', key .. 'slot')
  local expiry = now_ms + tonumber(ARGV[2])
  expire_semaphore(token, expiry)
  redis.call('ZADD', KEYS[6], string.format('%d', expiry), token)
  if shared then
    return {1, tonumber(own[1])}
  end
  return {1, tonumber(own[1]), tonumber(own[2])}
end
if plain_holder == token then
  -- Our own earlier attempt took it and its reply was lost: the lease
  -- starts again now, as the caller counts it. Its fence stands unless a
  -- later one was handed out or written back here since (Redlock: another
  -- holder's quorum raised this server's counter while our stale lease sat
  -- here); then it takes a new one, above that.
  local fence = tonumber(redis.call('HGET', KEYS[1], 'fence')) or 0
  local last = tonumber(redis.call('GET', KEYS[2])) or 0
  if last > fence then
    fence = next_fence()
    redis.call('HSET', KEYS[1], 'fence', string.format('%d', fence))
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, fence}
end
local head, head_expiry, dead = live_head()
local holders = held_limit and #live_holders() or 0
local held = plain_holder ~= nil
if held_limit == k_shared then
  held = held or not shared
elseif held_limit then
  held = held or holders >= limit
end
local parent_holds = parent ~= ''
  and (plain_holder == parent or holder_expiry(parent) ~= nil)
local nested = shared and held_limit == k_shared and parent_holds
if limit ~= 0 and not held and (head == nil or head == token or nested) then
  local fence = next_fence()
  local slot = (not shared) and free_slot() or nil
  take_permit(fence, slot)
  forget(dead)
  leave_queue(token)
  -- Room is left: the next waiter may get in too (a shared waiter does; a
  -- plain one finds it held and keeps its place). A release wakes one
  -- waiter, so each that gets in passes the wake-up on.
  if shared or holders + 1 < limit then
    if live_head() or waiters_outside() then
      wake()
    end
  elseif waited then
    -- The wake-up reached a waiter that took it: nobody passes it on now.
    redis.pcall('DEL', KEYS[8])
  end
  if shared then
    return {1, fence}
  end
  return {1, fence, slot}
end
if limit == 0 and not held and (head == nil or head == token) then
  local fence = next_fence()
  redis.call('HSET', KEYS[1],
    'token', token, 'fence', string.format('%d', fence), 'ttl_ms', ARGV[2],
    'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6],
    'acquired_ms', string.format('%d', now_ms), 'renewals', 0)
  if waited then
    mark_waiters()
    -- The wake-up reached a waiter that took it: nobody passes it on now.
    redis.pcall('DEL', KEYS[8])
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  clear_stale_semaphore()
  forget(dead)
  leave_queue(token)
  return {1, fence}
end

local place = 0
local queue_ttl = tonumber(ARGV[7])
if queue_ttl == 0 and place_ttl > 0 and not parent_holds
    and (head or (limit == 0 and held_limit == k_shared)
      or redis.call('ZSCORE', KEYS[3], token)) then
  queue_ttl = place_ttl
end
if queue_ttl > 0 then
  redis.call('ZADD', KEYS[4], string.format('%d', now_ms + queue_ttl), token)
  if not redis.call('ZSCORE', KEYS[3], token) then
    redis.call('ZADD', KEYS[3], string.format('%d', now_us), token)
  end
  -- If every waiter dies, the queue goes by itself.
  redis.call('PEXPIRE', KEYS[3], queue_ttl * 2)
  redis.call('PEXPIRE', KEYS[4], queue_ttl * 2)
end
forget(dead)
if queue_ttl > 0 then
  place = redis.call('ZRANK', KEYS[3], token) + 1
end

if held then
  if queue_ttl > 0 or place_ttl > 0 then
    mark_waiters()
  end
  return held_reply(place)
end
if held_limit == k_shared then
  -- A shared run behind the queue's head (a plain waiter, writers first):
  -- it waits while the shared holders hold, and looks again when the head's
  -- place would expire at the latest.
  local reply = held_reply(place)
  reply[2] = math.min(reply[2], head_expiry - now_ms)
  return reply
end
-- Free for the queue's head, not for this waiter: a wake-up it took was
-- the head's (see pass_wakeup() in prelude.lua).
if waited then
  pass_wakeup(token)
end
return {0, head_expiry - now_ms, 'the next waiter in the queue', '', place, 0, 0}
