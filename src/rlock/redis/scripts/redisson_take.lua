-- --compat redisson: takes Redisson's RLock at NAME as its tryLock script
-- does (RedissonLock.tryLockInnerAsync), when NAME does not exist, or
-- holds our own field already (a retried acquire).
-- KEYS[1]  NAME
-- KEYS[2]  rlock's fence counter beside it (PREFIX{NAME}:fence, the same
--          Cluster slot), as --compat string keeps it
-- ARGV[1]  our field, "<token>:<n>" as Redisson's "<client id>:<thread id>"
-- ARGV[2]  the lease in ms
-- Returns {'granted', fence}; {'busy', pttl, field...} when another holds it;
-- {'wrongtype', type} when NAME is not a hash (it is never touched then).
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind == 'none' then
  redis.call('HSET', KEYS[1], ARGV[1], 1)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'granted', redis.call('INCR', KEYS[2])}
end
if kind ~= 'hash' then
  return {'wrongtype', kind}
end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'granted', tonumber(redis.call('GET', KEYS[2]) or '0')}
end
local reply = {'busy', redis.call('PTTL', KEYS[1])}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  table.insert(reply, field)
end
return reply
