-- The strict-key check, put in front of every script by the builds that
-- run the tests (RLOCK_STRICT_KEY_CHECK, see cmake/EmbedScripts.cmake), never
-- by the ones that ship: as Dragonfly, Kvrocks' lua-strict-key-accessing
-- and some cloud proxies do, a script fails on a key that is not in KEYS.
-- A local `redis` shadows the global one (Redis 7 makes it read-only) for
-- the rest of the script; a command it does not know fails too, so that a
-- new one is classified here first.
local strict_redis = redis
local strict_declared = {}
for _, key in ipairs(KEYS) do
  strict_declared[key] = true
end

-- Which arguments of each command the scripts use are keys: 'first', 'all',
-- 'all_but_last' (BLPOP's timeout), or 'none' (a channel is not a key).
local strict_key_args = {
  DEL = 'all', EXISTS = 'all', MGET = 'all', UNLINK = 'all',
  BLPOP = 'all_but_last',
  GET = 'first', SET = 'first', PTTL = 'first', PEXPIRE = 'first',
  PEXPIREAT = 'first',
  HGET = 'first', HSET = 'first', HMGET = 'first', HDEL = 'first',
  HEXISTS = 'first', HINCRBY = 'first', HKEYS = 'first',
  ZADD = 'first', ZREM = 'first', ZRANGE = 'first', ZREVRANGE = 'first',
  ZRANGEBYSCORE = 'first', ZSCORE = 'first', ZCARD = 'first', ZRANK = 'first',
  LLEN = 'first', RPUSH = 'first', LPUSH = 'first',
  SADD = 'first', SREM = 'first', SISMEMBER = 'first',
  TIME = 'none', PUBLISH = 'none', SPUBLISH = 'none',
  TYPE = 'first', INCR = 'first', -- the --compat string scripts
}

local function strict_check(args)
  local command = string.upper(tostring(args[1]))
  local kind = strict_key_args[command]
  if not kind then
    error('strict key check: command ' .. command .. ' is not classified')
  end
  local last = 0
  if kind == 'first' then
    last = 2
  elseif kind == 'all' then
    last = #args
  elseif kind == 'all_but_last' then
    last = #args - 1
  end
  for i = 2, last do
    if not strict_declared[args[i]] then
      error('strict key check: ' .. command .. ' touches key '
        .. tostring(args[i]) .. ', which is not in KEYS')
    end
  end
end

local redis = setmetatable({
  call = function(...)
    strict_check({...})
    return strict_redis.call(...)
  end,
  pcall = function(...)
    strict_check({...})
    return strict_redis.pcall(...)
  end,
}, {__index = strict_redis})
