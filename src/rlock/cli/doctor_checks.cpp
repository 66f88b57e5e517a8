#include <rlock/cli/doctor_checks.hpp>
#include <rlock/redis/cluster.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::cli {

using namespace doctor;

namespace {

// Each master of `topology` with its checks from `facts`, in slot order;
// then any server of `facts` no master names.
std::vector<ServerChecks>
masters_checked(const std::vector<ServerFacts>& facts,
                const lock::LeaseTiming& timing,
                const DeploymentFacts& deployment) {
  std::vector<ServerChecks> servers;
  std::vector<bool> used(facts.size(), false);
  for (const auto& shard :
       std::get<lock::ClusterDeploymentState>(*deployment.topology).shards) {
    ServerChecks server{
        shard.master, redis::format_slot_spans(shard.slot_spans), {}, {}};
    const auto found =
        std::find_if(facts.begin(), facts.end(), [&](const ServerFacts& each) {
          return each.address == shard.master;
        });
    if (found == facts.end()) {
      server.error = shard.error.empty() ? "no reason given" : shard.error;
    } else {
      used[static_cast<std::size_t>(found - facts.begin())] = true;
      server.checks = diagnose(*found, timing, deployment);
    }
    servers.push_back(std::move(server));
  }
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (!used[i]) {
      servers.push_back(
          {facts[i].address, {}, diagnose(facts[i], timing, deployment), {}});
    }
  }
  return servers;
}

// Each server of a quorum with its checks, in the order of `facts`; one that
// did not answer says why.
std::vector<ServerChecks>
quorum_checked(const std::vector<ServerFacts>& facts,
               const lock::LeaseTiming& timing,
               const DeploymentFacts& deployment) {
  std::vector<ServerChecks> servers;
  for (const auto& server : facts) {
    if (did_not_answer(server)) {
      servers.push_back({server.address, {}, {}, server.info_error});
    } else {
      servers.push_back(
          {server.address, {}, diagnose(server, timing, deployment), {}});
    }
  }
  return servers;
}

} // namespace

CheckResult
check_name(const NamedLock& lock,
           const std::string& server,
           const DeploymentFacts& deployment) {
  auto check = named("name");
  check.values = {{"name", lock.name}, {"key", lock.key}, {"slot", nullptr}};
  const std::string head =
      "lock " + quote(lock.name) + " is key " + quote(lock.key);
  const auto* topology = deployment.topology ? &*deployment.topology : nullptr;
  if (const auto* cluster =
          std::get_if<lock::ClusterDeploymentState>(topology)) {
    const int slot = redis::key_slot(lock.key);
    check.values["slot"] = slot;
    judge_cluster_name(
        check, *cluster, head + " in slot " + std::to_string(slot), slot);
    return check;
  }
  check.status = CheckStatus::ok;
  if (const auto* quorum = std::get_if<lock::QuorumDeploymentState>(topology)) {
    check.values["master"] = nullptr;
    check.message = head + " on each of the "
                    + servers_count(quorum->servers.size()) + ", held when "
                    + std::to_string(quorum->quorum) + " of them agree";
    return check;
  }
  check.values["master"] = server;
  check.message = head + " on " + server;
  if (const auto* sentinel =
          std::get_if<lock::SentinelDeploymentState>(topology)) {
    check.message +=
        ", the master the sentinels name " + quote(sentinel->master_name);
  }
  return check;
}

std::vector<CheckResult>
diagnose(const ServerFacts& facts,
         const lock::LeaseTiming& timing,
         const DeploymentFacts& deployment) {
  std::vector<CheckResult> checks{check_version(facts),
                                  check_eviction(facts),
                                  check_persistence(facts),
                                  check_replication(facts, deployment.replicas),
                                  check_latency(facts, timing),
                                  check_clock(facts)};
  if (deployment.restart_grace > Duration::zero()) {
    checks.push_back(check_holdback(facts, deployment.restart_grace));
  }
  const auto* topology = deployment.topology ? &*deployment.topology : nullptr;
  if (const auto* sentinel =
          std::get_if<lock::SentinelDeploymentState>(topology)) {
    checks.push_back(check_sentinels(*sentinel));
    checks.push_back(check_failover(*sentinel, timing));
  }
  return checks;
}

DoctorReport
diagnose_all(const std::vector<ServerFacts>& facts,
             const lock::LeaseTiming& timing,
             const DeploymentFacts& deployment,
             const std::optional<NamedLock>& name) {
  DoctorReport report;
  const auto* topology = deployment.topology ? &*deployment.topology : nullptr;
  const auto* cluster = std::get_if<lock::ClusterDeploymentState>(topology);
  const auto* quorum = std::get_if<lock::QuorumDeploymentState>(topology);
  report.cluster = cluster != nullptr;
  report.quorum = quorum != nullptr;
  if (cluster) {
    report.servers = masters_checked(facts, timing, deployment);
    report.deployment = {check_cluster(*cluster),
                         check_cluster_replicas(*cluster),
                         check_cluster_failover(*cluster, timing)};
  } else if (quorum) {
    report.servers = quorum_checked(facts, timing, deployment);
    report.deployment = {
        check_quorum(facts, *quorum),
        check_independent(facts),
        check_restarts(facts, timing, deployment.restart_grace),
        check_clocks(facts, timing)};
  } else {
    for (const auto& server : facts) {
      report.servers.push_back(
          {server.address, {}, diagnose(server, timing, deployment), {}});
    }
  }
  if (name) {
    const auto server = facts.empty() ? std::string() : facts.front().address;
    report.deployment.push_back(check_name(*name, server, deployment));
  }
  return report;
}

} // namespace rlock::cli
