#pragma once

#include <rlock/cli/doctor_check.hpp>
#include <rlock/lock/replicas.hpp>

// The checks of one server, whatever the deployment: each a pure function
// from what the server said to one verdict.
namespace rlock::cli {

// Returns the numbers of a version such as "7.0.15" or "6.2.6-rc1" ({7, 0,
// 15}), or nothing when it does not start with a number.
std::optional<std::vector<int>> parse_version(std::string_view text);

// Returns the `version` check: fail below k_min_redis_version or when a test
// script is refused, unknown when no version was told.
CheckResult check_version(const ServerFacts& facts);

// Returns the `eviction` check: warn when maxmemory-policy may evict keys
// and maxmemory is set (or unknown).
CheckResult check_eviction(const ServerFacts& facts);

// Returns the `persistence` check: warn unless appendonly yes (and
// appendfsync is not no).
CheckResult check_persistence(const ServerFacts& facts);

// Returns the `replication` check: fail on a replica or when `policy` asks
// more confirmations than the master can get, warn when no replica confirms
// the locks.
CheckResult check_replication(const ServerFacts& facts,
                              const lock::ReplicaPolicy& policy);

// Returns the `latency` check of the round trips against `timing`: fail at
// the renewal interval or above, warn above the margin.
CheckResult check_latency(const ServerFacts& facts,
                          const lock::LeaseTiming& timing);

// Returns the `clock` check: warn when the server's clock is off by more than
// k_max_clock_offset_ms or runs at a rate off by k_max_clock_rate_error.
CheckResult check_clock(const ServerFacts& facts);

// Returns the `holdback` check: how --restart-grace `grace` (above zero)
// treats the server now: warn while it holds locks back (up less than the
// grace, no copy synced from a former master), unknown when INFO does not
// say when it started (runs then fail with 69), ok otherwise.
CheckResult check_holdback(const ServerFacts& facts, Duration grace);

} // namespace rlock::cli
