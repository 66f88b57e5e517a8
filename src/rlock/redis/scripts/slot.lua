-- --once-per: the current slot, by the server's clock, and whether a run
-- already succeeded in it. Slots are D long and aligned to the Unix epoch.
-- KEYS[5]  the last successful slot's number
-- ARGV[1]  the slot length D in ms
-- Returns {slot, 1 when done already else 0, ms left in the slot}.
local length = tonumber(ARGV[1])
local slot = math.floor(now_ms / length)
local done = redis.call('GET', KEYS[5]) == string.format('%d', slot) and 1 or 0
return {slot, done, (slot + 1) * length - now_ms}
