#pragma once

// What the doctor tests judge: a healthy server as CONFIG GET and INFO
// describe it, and the Sentinel, Cluster and quorum deployments built from
// it. Each test changes one fact and reads one verdict.

#include <rlock/cli/doctor_checks.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace doctor_facts {

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::cli;

// A healthy server as CONFIG GET and INFO describe it.
inline ServerFacts
healthy() {
  ServerFacts facts;
  facts.address = "127.0.0.1:6379";
  facts.config = {{"maxmemory-policy", "noeviction"},
                  {"maxmemory", "0"},
                  {"appendonly", "yes"},
                  {"appendfsync", "everysec"},
                  {"save", ""}};
  facts.info = {{"redis_version", "7.0.15"},
                {"maxmemory_policy", "noeviction"},
                {"maxmemory", "0"},
                {"aof_enabled", "1"},
                {"rdb_last_save_time", "1700000000"},
                {"rdb_changes_since_last_save", "3"},
                {"role", "master"},
                {"connected_slaves", "0"}};
  facts.version = "7.0.15";
  facts.round_trips = {200us, 100us, 300us, 150us, 250us};
  facts.server_time_ms = 1'700'000'012'000;
  facts.clock_offset_ms = 3;
  facts.clock_uncertainty = 50us;
  return facts;
}

inline lock::LeaseTiming
timing(Duration ttl = 30s) {
  return lock::make_timing(ttl, std::nullopt).value();
}

// Returns the check called `name` of diagnose().
inline CheckResult
check(const ServerFacts& facts,
      const std::string& name,
      const lock::LeaseTiming& lease = timing(),
      const DeploymentFacts& deployment = {}) {
  for (auto& result : diagnose(facts, lease, deployment)) {
    if (result.name == name) {
      return result;
    }
  }
  FAIL("no check named " << name);
  return {};
}

// The facts of a server whose CONFIG GET is refused (INFO still answers).
inline ServerFacts
without_config(ServerFacts facts) {
  facts.config.clear();
  facts.config_error = "NOPERM this user has no permissions to run the "
                       "'config|get' command";
  return facts;
}

inline ServerFacts
without_config_or_info(ServerFacts facts) {
  facts = without_config(facts);
  facts.info.clear();
  facts.info_error = "NOPERM no 'info'";
  return facts;
}

// A Sentinel deployment whose two sentinels agree, with a failover
// detected after `down_after_ms`.
inline lock::SentinelDeploymentState
sentinel_topology(const std::string& down_after_ms) {
  lock::SentinelDeploymentState state;
  state.master_name = "mymaster";
  state.master = "10.0.0.1:6379";
  for (const char* address : {"10.0.0.9:26379", "10.0.0.8:26379"}) {
    state.sentinels.push_back(
        {address,
         state.master,
         {{"down-after-milliseconds", down_after_ms}},
         "OK 2 usable Sentinels. Quorum and failover authorization can be "
         "reached",
         ""});
  }
  return state;
}

inline lock::ClusterShardState
shard(const std::string& master, int first, int last) {
  lock::ClusterShardState shard;
  shard.master = master;
  shard.slots = last - first + 1;
  shard.slot_spans = {{first, last}};
  shard.replicas = {{"10.0.1.1:6379", "online", 0}};
  shard.cluster_info = {{"cluster_state", "ok"},
                        {"cluster_slots_ok", "16384"},
                        {"cluster_known_nodes", "6"}};
  shard.node_timeout_ms = 5000;
  return shard;
}

// Three masters with a replica each, all slots served, 5s node timeout.
inline lock::ClusterDeploymentState
cluster_topology() {
  lock::ClusterDeploymentState state;
  state.shards = {shard("10.0.0.1:6379", 0, 5460),
                  shard("10.0.0.2:6379", 5461, 10922),
                  shard("10.0.0.3:6379", 10923, 16383)};
  return state;
}

// The three masters of cluster_topology(), each healthy.
inline std::vector<ServerFacts>
cluster_facts() {
  std::vector<ServerFacts> all;
  for (const char* address :
       {"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}) {
    auto facts = healthy();
    facts.address = address;
    all.push_back(facts);
  }
  return all;
}

// Five independent masters that keep their locks through a restart, up an
// hour, their clocks a few ms apart; quorum 3.
inline std::vector<ServerFacts>
quorum_facts() {
  std::vector<ServerFacts> all;
  for (int i = 0; i < 5; ++i) {
    auto facts = healthy();
    facts.address = "10.0.0." + std::to_string(i + 1) + ":6379";
    facts.config["appendfsync"] = "always";
    facts.info["run_id"] = std::string(40, static_cast<char>('a' + i));
    facts.info["uptime_in_seconds"] = "3600";
    facts.clock_offset_ms = i - 2;
    facts.clock_rate = lock::ClockRate{250ms, 250ms, 100us};
    all.push_back(facts);
  }
  return all;
}

inline lock::QuorumDeploymentState
quorum_topology(const std::vector<ServerFacts>& facts, int quorum = 3) {
  lock::QuorumDeploymentState state;
  state.quorum = quorum;
  for (const auto& server : facts) {
    state.servers.push_back({server.address, {}});
  }
  return state;
}

// What QuorumStore::examine() gives for a server that did not answer.
inline ServerFacts
silent(const std::string& address) {
  ServerFacts facts;
  facts.address = address;
  facts.info_error = "connection refused";
  return facts;
}

// Makes `facts` a replica of host:port.
inline void
make_replica(ServerFacts& facts, const std::string& host, int port) {
  facts.info["role"] = "slave";
  facts.info["master_host"] = host;
  facts.info["master_port"] = std::to_string(port);
  facts.info["connected_slaves"] = "0";
}

} // namespace doctor_facts
