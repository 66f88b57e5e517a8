-- Takes the lock when it is free and no live waiter is ahead in the queue,
-- in one atomic step; otherwise (with a queue lifetime) joins or refreshes
-- this waiter's place in the queue.
-- ARGV[1]  the holder's token        ARGV[2]  the lease length in ms
-- ARGV[3]  host   ARGV[4]  pid   ARGV[5]  user   ARGV[6]  command line
-- ARGV[7]  queue entry lifetime in ms; 0 to wait outside the queue
-- Returns {1, fence} when acquired; otherwise
-- {0, retry_ms, "user@host:pid", command, place, holder_ttl_ms, held_ms}
-- (as peek.lua does, see held_reply in prelude.lua): retry_ms is
-- when to look again at the latest (the lease's PTTL, or the expiry of the
-- waiter ahead; -1 for a lease without expiry), place is the 1-based place
-- in the queue (0 outside it), held_ms how long the holder has held it.
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
if redis.call('HGET', KEYS[1], 'token') == token then
  -- Our own earlier attempt took it and its reply was lost: the lease
  -- starts again now, as the caller counts it.
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('HGET', KEYS[1], 'fence'))}
end
local head, head_expiry, dead = live_head()
local held = redis.call('EXISTS', KEYS[1]) == 1
if not held and (head == nil or head == token) then
  local fence = next_fence()
  redis.call('HSET', KEYS[1],
    'token', token, 'fence', string.format('%d', fence), 'ttl_ms', ARGV[2],
    'host', ARGV[3], 'pid', ARGV[4], 'user', ARGV[5], 'command', ARGV[6],
    'acquired_ms', string.format('%d', now_ms), 'renewals', 0)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  forget(dead)
  leave_queue(token)
  return {1, fence}
end

local place = 0
local queue_ttl = tonumber(ARGV[7])
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

if not held then
  return {0, head_expiry - now_ms, 'the next waiter in the queue', '', place, 0, 0}
end
return held_reply(place)
