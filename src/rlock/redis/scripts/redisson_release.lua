-- --compat redisson: ends our hold on Redisson's RLock at NAME as
-- Redisson's unlock does when the count reaches 0
-- (RedissonLock.unlockInnerAsync): DEL NAME and publish the unlock message
-- on the lock's channel, which wakes Redisson's waiters (pubsub/LockPubSub)
-- and rlock's alike.
-- KEYS[1]  NAME
-- ARGV[1]  our field
-- ARGV[2]  the channel, "redisson_lock__channel:{NAME}"
-- ARGV[3]  the unlock message, "0" (LockPubSub.UNLOCK_MESSAGE)
-- Returns 1 when we held it, 0 when not.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash'
    or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
