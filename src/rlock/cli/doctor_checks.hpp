#pragma once

#include <rlock/cli/doctor_check.hpp>
#include <rlock/cli/doctor_cluster.hpp>
#include <rlock/cli/doctor_quorum.hpp>
#include <rlock/cli/doctor_report.hpp>
#include <rlock/cli/doctor_sentinel.hpp>
#include <rlock/cli/doctor_server.hpp>
#include <rlock/lock/lease.hpp>
#include <rlock/lock/replicas.hpp>

#include <optional>
#include <string>
#include <vector>

// rlock doctor's verdicts: pure functions from what the server said to one
// line per check. Gathering the facts is doctor.cpp's job. This file picks
// the checks a deployment gets; each topology's are in a file of its own
// over doctor_check.hpp, the report in doctor_report.hpp.
namespace rlock::cli {

// What doctor knows of the deployment besides the server's own facts.
struct DeploymentFacts {
  lock::ReplicaPolicy replicas; // what --replicas asks of each write
  // Set for Sentinel (the sentinels' views of the master), Cluster (each
  // master, its replicas and slots) and a quorum (each server, the quorum).
  std::optional<lock::DeploymentState> topology;
  // --restart-grace: a server up less than this grants no lock.
  Duration restart_grace{};
};

// The lock `rlock doctor NAME` asks about.
struct NamedLock {
  std::string name;
  std::string key; // where the store keeps it
};

// Returns the checks of one server, in the order they are printed: version,
// eviction, persistence, replication, latency (against `timing`) and clock;
// with Sentinel, then sentinels and failover.
std::vector<CheckResult> diagnose(const ServerFacts& facts,
                                  const lock::LeaseTiming& timing,
                                  const DeploymentFacts& deployment = {});

// Returns the `name` check: where `lock` lives. On a Cluster its slot and the
// master serving it, failing when none does, or that master did not answer or
// says cluster_state fail; with a quorum on each server; elsewhere `server`
// (ok).
CheckResult check_name(const NamedLock& lock,
                       const std::string& server,
                       const DeploymentFacts& deployment);

// Returns every check: diagnose() of each server in `facts` (one, each
// master of a Cluster, in slot order, a master missing from `facts` saying
// why, or each server of a quorum, one that did not answer saying why), then
// the Cluster's or the quorum's checks, then `name`'s.
DoctorReport diagnose_all(const std::vector<ServerFacts>& facts,
                          const lock::LeaseTiming& timing,
                          const DeploymentFacts& deployment,
                          const std::optional<NamedLock>& name = {});

} // namespace rlock::cli
