-- --once-per: records that the run for a slot succeeded.
-- KEYS[5]  the last successful slot's number
-- ARGV[1]  the slot number      ARGV[2]  how long to keep it, in ms
-- Returns 1.
redis.call('SET', KEYS[5], ARGV[1], 'PX', ARGV[2])
return 1
