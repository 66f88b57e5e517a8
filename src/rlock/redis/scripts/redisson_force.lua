-- --compat redisson: ends the hold on Redisson's RLock at NAME whoever holds
-- it, as Redisson's forceUnlock does (RedissonLock.forceUnlockAsync: DEL,
-- then the unlock message; on a Cluster also SPUBLISHed, as in
-- redisson_release.lua).
-- KEYS[1]  NAME
-- ARGV[1]  the channel
-- ARGV[2]  the unlock message
-- ARGV[3]  'sharded' on a Cluster node, else ''
-- Returns {type, field...}: what was there ('none': free; not 'hash':
-- left alone), and the holders' fields of the hash deleted.
local kind = redis.call('TYPE', KEYS[1])['ok']
if kind ~= 'hash' then
  return {kind}
end
local reply = {kind}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  table.insert(reply, field)
end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[1], ARGV[2])
if ARGV[3] == 'sharded' then
  redis.pcall('SPUBLISH', ARGV[1], ARGV[2])
end
return reply
