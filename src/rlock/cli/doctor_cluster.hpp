#pragma once

#include <rlock/cli/doctor_check.hpp>
#include <rlock/lock/lease.hpp>

#include <string>

// The checks of a Redis Cluster as a whole, after each master's.
namespace rlock::cli {

// Returns the `cluster` check: fail when a master says cluster_state other
// than ok or did not answer, or slots are served by no master; warn when a
// master sees slots failing or the masters disagree on the nodes they know.
CheckResult check_cluster(const lock::ClusterDeploymentState& topology);

// Returns the `replicas` check: warn when a master has no replica online.
CheckResult
check_cluster_replicas(const lock::ClusterDeploymentState& topology);

// Returns the Cluster's `failover` check: the largest cluster-node-timeout
// against the TTL (fail at or above it, warn within 2s), unknown when no
// master told it.
CheckResult check_cluster_failover(const lock::ClusterDeploymentState& topology,
                                   const lock::LeaseTiming& timing);

// Judges the `name` check of a lock whose key is in `slot`: fail when no
// master serves it, or its master did not answer or says cluster_state other
// than ok; ok naming the master and its replicas. `head` starts the message.
void judge_cluster_name(CheckResult& check,
                        const lock::ClusterDeploymentState& topology,
                        const std::string& head,
                        int slot);

} // namespace rlock::cli
