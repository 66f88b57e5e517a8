-- Extends the lease, only for the holder of the token.
-- ARGV[1]  the holder's token
-- ARGV[2]  the new lease length in ms; 0 for the one it was taken with
-- ARGV[3]  'exact': the lease ends ARGV[2] from now; 'at_least': it is only
--          ever lengthened (rlock extend from inside a job must not cut the
--          lease its supervising rlock counts on)
-- Returns {1, pttl} when the token holds the lock, pttl being the lease's
-- PTTL found before extending it (-1 without expiry); {0, -2} otherwise.
-- A semaphore's holder (KEYS[6]) renews its own permit alike.

-- Renews `token`'s permit of a semaphore, as the plain lock's lease below.
local function renew_permit(token, length, mode)
  local expiry = holder_expiry(token)
  if not expiry then
    return {0, -2}
  end
  local before = expiry - now_ms
  local ttl_field = token .. ':ttl_ms'
  local stored = redis.call('HGET', KEYS[1], ttl_field)
  local ttl = length == '0' and stored or length
  if mode == 'at_least' and before >= tonumber(ttl) then
    return {1, before}
  end
  -- The expiries first: they cannot grow memory (see below).
  local new_expiry = now_ms + tonumber(ttl)
  expire_semaphore(token, new_expiry)
  redis.call('ZADD', KEYS[6], 'XX', string.format('%d', new_expiry), token)
  if ttl ~= stored then
    redis.call('HSET', KEYS[1], ttl_field, ttl)
  end
  redis.call('HINCRBY', KEYS[1], token .. ':renewals', 1)
  return {1, before}
end
if limit_of_lock() then
  return renew_permit(ARGV[1], ARGV[2], ARGV[3])
end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return {0, -2}
end
local before = redis.call('PTTL', KEYS[1])
local stored = redis.call('HGET', KEYS[1], 'ttl_ms')
local ttl = ARGV[2]
if ttl == '0' then
  ttl = stored
end
if ARGV[3] == 'at_least' and (before == -1 or before >= tonumber(ttl)) then
  return {1, before}
end
-- PEXPIRE first: it cannot grow memory, so Redis over maxmemory lets it and
-- the rest of the script through, where a first HSET would be refused and
-- every holder would lose its lock.
redis.call('PEXPIRE', KEYS[1], ttl)
if ttl ~= stored then
  redis.call('HSET', KEYS[1], 'ttl_ms', ttl)
end
redis.call('HINCRBY', KEYS[1], 'renewals', 1)
return {1, before}
