# shellcheck shell=bash
#
# The least-privilege ACL rule for rlock on one server with the default
# prefix (README "Managed and compatible servers", man page ACL): run mode,
# the script steps, waiting and status. docs.bats checks that the docs give
# this rule word for word; the acl/... ctest suites run the CLI tests as a
# user that has exactly it (RLOCK_TEST_ACL, helpers.bash).
RLOCK_ACL_RULE='resetkeys ~rlock:* resetchannels &rlock:* -@all +evalsha +eval +blpop +subscribe +unsubscribe +ping +info +select +scan +hgetall +time +hello +auth +quit +del +exists +get +set +hdel +hexists +hget +hmget +hset +hincrby +llen +rpush +pexpire +pexpireat +pttl +publish +zadd +zcard +zrange +zrangebyscore +zrank +zrem +zrevrange +zscore +zcount +sadd +hkeys +incr +lpush +type'
export RLOCK_ACL_RULE
