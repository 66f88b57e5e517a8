-- --compat redisson: ends our hold on Redisson's RLock at NAME as
-- Redisson's unlock does when the count reaches 0
-- (RedissonLock.unlockInnerAsync): DEL NAME and publish the unlock message
-- on the lock's channel, which wakes Redisson's waiters (pubsub/LockPubSub)
-- and rlock's alike. On a Cluster it also SPUBLISHes it, as Redisson does
-- there in its sharded mode (PublishSubscribeService.getPublishCommand);
-- with pcall, as a server before Redis 7 knows no SPUBLISH.
-- KEYS[1]  NAME
-- ARGV[1]  our field
-- ARGV[2]  the channel, "redisson_lock__channel:{NAME}"
-- ARGV[3]  the unlock message, "0" (LockPubSub.UNLOCK_MESSAGE)
-- ARGV[4]  'sharded' on a Cluster node, else ''
-- Returns 1 when we held it, 0 when not.
if redis.call('TYPE', KEYS[1])['ok'] ~= 'hash'
    or redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
if ARGV[4] == 'sharded' then
  redis.pcall('SPUBLISH', ARGV[2], ARGV[3])
end
return 1
