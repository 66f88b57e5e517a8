#pragma once

#include <rlock/cli/doctor_check.hpp>
#include <rlock/lock/lease.hpp>

// The checks of a Sentinel deployment, added to its master's.
namespace rlock::cli {

// Returns the `sentinels` check: fail when no sentinel can reach a failover
// quorum (SENTINEL CKQUORUM), warn when one did not answer or names another
// master, ok when all name the master.
CheckResult check_sentinels(const lock::SentinelDeploymentState& topology);

// Returns Sentinel's `failover` check: the largest down-after-milliseconds
// against the TTL (fail at or above it, warn within 2s), unknown when no
// sentinel told it.
CheckResult check_failover(const lock::SentinelDeploymentState& topology,
                           const lock::LeaseTiming& timing);

} // namespace rlock::cli
