-- Tells whether a token holds the lock, and for how long yet.
-- ARGV[1]  the token
-- Returns the lease's PTTL in ms when the token holds the lock (-1 for a
-- lease without expiry), -2 when it does not.
if limit_of_lock() then
  local expiry = holder_expiry(ARGV[1])
  return expiry and expiry - now_ms or -2
end
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then
  return -2
end
return redis.call('PTTL', KEYS[1])
