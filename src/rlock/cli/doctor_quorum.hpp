#pragma once

#include <rlock/cli/doctor_check.hpp>
#include <rlock/lock/lease.hpp>

#include <vector>

// The checks of a quorum of independent servers (Redlock) as a whole, after
// each server's.
namespace rlock::cli {

// Returns the `quorum` check of a quorum of servers (Redlock): ok when at
// least topology.quorum of `facts` answered, fail otherwise.
CheckResult check_quorum(const std::vector<ServerFacts>& facts,
                         const lock::QuorumDeploymentState& topology);

// Returns the `independent` check: fail when two servers that answered share
// a run_id (one server named twice) or one is a replica; unknown when a
// server's INFO did not tell; ok when each is a master of its own.
CheckResult check_independent(const std::vector<ServerFacts>& facts);

// Returns the `restarts` check: warn when a server forgets its locks on a
// restart (not appendonly yes with appendfsync always) and `restart_grace`
// is below the TTL, or when such a server has been up less than the TTL.
CheckResult check_restarts(const std::vector<ServerFacts>& facts,
                           const lock::LeaseTiming& timing,
                           Duration restart_grace);

// Returns the `clocks` check: warn when two servers' clocks differ by more
// than the drift a quorum allows for (1% of the TTL + 2ms); unknown when
// fewer than two told their TIME.
CheckResult check_clocks(const std::vector<ServerFacts>& facts,
                         const lock::LeaseTiming& timing);

// Returns true when `facts` are those of a server that did not answer (only
// its address and why are known).
bool did_not_answer(const ServerFacts& facts);

} // namespace rlock::cli
