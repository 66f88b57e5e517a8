// rlock doctor on a Redis Cluster (cli/doctor_cluster.cpp and the report's
// sections): each master's checks, then the Cluster's.

#include <rlock/cli/doctor_checks.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "doctor_facts.hpp"
#include "lines.hpp"

using namespace doctor_facts;

// cluster

TEST_CASE("cluster: all masters ok, all slots served, one node count: ok") {
  const auto result = check_cluster(cluster_topology());
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "cluster_state ok on all 3 masters, all 16384 slots served, 6 "
           "nodes known");
  CHECK(result.values["each"].size() == 3);
}

TEST_CASE("cluster: a master that sees slots failing, or masters that know "
          "different nodes, warn") {
  auto topology = cluster_topology();
  topology.shards[1].cluster_info["cluster_slots_ok"] = "10922";
  topology.shards[2].cluster_info["cluster_known_nodes"] = "7";
  const auto result = check_cluster(topology);
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::Contains("10.0.0.2:6379 sees 10922 of 16384 slots ok"));
  CHECK_THAT(result.message,
             Catch::Contains("6 at 10.0.0.1:6379, 6 at 10.0.0.2:6379, 7 at "
                             "10.0.0.3:6379"));
}

TEST_CASE("cluster: a master that says cluster_state fail fails") {
  auto topology = cluster_topology();
  topology.shards[0].cluster_info["cluster_state"] = "fail";
  const auto result = check_cluster(topology);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.1:6379 says cluster_state fail"));
}

TEST_CASE("cluster: slots no master serves fail") {
  auto topology = cluster_topology();
  topology.uncovered_slots = {{100, 199}};
  const auto result = check_cluster(topology);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("slots 100-199 are served by no master"));
  CHECK(result.values["uncovered_slots"] == "100-199");
}

TEST_CASE("cluster: a master that did not answer fails") {
  auto topology = cluster_topology();
  topology.shards[2].error = "connection refused";
  const auto result = check_cluster(topology);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.3:6379 did not answer (connection "
                               "refused)"));
}

TEST_CASE("cluster: no master told its CLUSTER INFO is unknown") {
  auto topology = cluster_topology();
  for (auto& each : topology.shards) {
    each.cluster_info.clear();
  }
  const auto result = check_cluster(topology);
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::StartsWith("cluster_state unknown"));
}

// replicas

TEST_CASE("replicas: every master with a replica online is ok, with the "
          "worst lag") {
  auto topology = cluster_topology();
  topology.shards[1].replicas[0].lag_s = 2;
  const auto result = check_cluster_replicas(topology);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::StartsWith("every master has a replica online (lag up to "
                               "2s)"));
  CHECK(result.values["worst_lag_s"] == 2);
}

TEST_CASE("replicas: a master that did not answer leaves its replicas "
          "unknown") {
  auto topology = cluster_topology();
  topology.shards[0].error = "timed out";
  const auto result = check_cluster_replicas(topology);
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("10.0.0.1:6379"));
}

TEST_CASE("replicas: a master without a replica online (none, or one still "
          "syncing) warns, whoever else did not answer") {
  auto topology = cluster_topology();
  topology.shards[0].error = "timed out";
  topology.shards[1].replicas.clear();
  topology.shards[2].replicas[0].state = "wait_bgsave";
  const auto result = check_cluster_replicas(topology);
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("no replica online for 10.0.0.2:6379 (5462 "
                               "slots), 10.0.0.3:6379 (5461 slots): "));
}

// failover

TEST_CASE("failover: cluster-node-timeout well within the TTL is ok") {
  const auto result = check_cluster_failover(cluster_topology(), timing(30s));
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::StartsWith("a failover takes cluster-node-timeout (5s)"));
  CHECK(result.values["node_timeout_ms"] == 5000);
}

TEST_CASE("failover: the largest cluster-node-timeout at the TTL fails, "
          "within 2s of it warns") {
  // Redis's default, 15s, with a 15s TTL.
  auto topology = cluster_topology();
  topology.shards[1].node_timeout_ms = 15000;
  const auto result = check_cluster_failover(topology, timing(15s));
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::Contains("every failover would stop the command"));
  CHECK_THAT(result.message, Catch::EndsWith("a lower cluster-node-timeout"));
  CHECK(check_cluster_failover(topology, timing(16s)).status
        == CheckStatus::warn);
  CHECK(check_cluster_failover(topology, timing(17s)).status
        == CheckStatus::warn);
  CHECK(check_cluster_failover(topology, timing(18s)).status
        == CheckStatus::ok);
}

TEST_CASE("failover: CONFIG GET refused on every master is unknown; on some, "
          "the others' timeouts count") {
  // -1, as a managed service gives.
  auto topology = cluster_topology();
  for (auto& each : topology.shards) {
    each.node_timeout_ms = -1;
  }
  const auto result = check_cluster_failover(topology, timing());
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("CONFIG GET refused"));
  CHECK(result.values["node_timeout_ms"].is_null());
  topology.shards[2].node_timeout_ms = 30000;
  CHECK(check_cluster_failover(topology, timing(30s)).status
        == CheckStatus::fail);
}

// name

TEST_CASE("name on a Cluster: its slot and the master serving it, ok") {
  const DeploymentFacts deployment{{}, cluster_topology()};
  // CLUSTER KEYSLOT rlock:{deploy} is 15335 (the tag "deploy").
  const NamedLock lock{"deploy", "rlock:{deploy}"};
  const auto result = check_name(lock, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:{deploy}' in slot 15335, served by "
           "10.0.0.3:6379 (replica 10.0.1.1:6379 online lag 0s)");
  CHECK(result.values["slot"] == 15335);
  CHECK(result.values["master"] == "10.0.0.3:6379");
}

TEST_CASE("name on a Cluster: its master says cluster_state fail: fail") {
  DeploymentFacts deployment{{}, cluster_topology()};
  std::get<lock::ClusterDeploymentState>(*deployment.topology)
      .shards[2]
      .cluster_info["cluster_state"] = "fail";
  const auto result = check_name(
      NamedLock{"deploy", "rlock:{deploy}"}, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::EndsWith("which says cluster_state fail: the lock cannot "
                             "be taken now (CLUSTERDOWN)"));
}

TEST_CASE("name on a Cluster: its master did not answer: fail") {
  DeploymentFacts deployment{{}, cluster_topology()};
  std::get<lock::ClusterDeploymentState>(*deployment.topology).shards[2].error =
      "connection refused";
  const auto result = check_name(
      NamedLock{"deploy", "rlock:{deploy}"}, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::EndsWith("which did not answer (connection "
                             "refused)"));
}

TEST_CASE("name on a Cluster: no master serves its slot: fail") {
  DeploymentFacts deployment{{}, cluster_topology()};
  std::get<lock::ClusterDeploymentState>(*deployment.topology)
      .shards.pop_back();
  std::get<lock::ClusterDeploymentState>(*deployment.topology)
      .uncovered_slots = {{10923, 16383}};
  const auto result = check_name(
      NamedLock{"deploy", "rlock:{deploy}"}, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("which no master serves"));
  CHECK(result.values["master"].is_null());
}

// the report

TEST_CASE("a Cluster's report: each master's six checks (no Sentinel's), "
          "then cluster, replicas, failover; all ok exits 0") {
  const DeploymentFacts deployment{{}, cluster_topology()};
  const auto report = diagnose_all(cluster_facts(), timing(), deployment);
  CHECK(report.cluster);
  REQUIRE(report.servers.size() == 3);
  CHECK(report.servers[1].slots == "5461-10922");
  std::vector<std::string> names;
  for (const auto& result : report.deployment) {
    names.push_back(result.name);
  }
  CHECK(names == std::vector<std::string>{"cluster", "replicas", "failover"});
  CHECK(report.servers[0].checks.size() == 6);
  CHECK(doctor_exit_code(report) == 0);
}

TEST_CASE("a Cluster's text: a section per master with its slots, then "
          "'cluster'") {
  const DeploymentFacts deployment{{}, cluster_topology()};
  const auto report = diagnose_all(cluster_facts(), timing(), deployment);
  const auto lines = lines_of(format_doctor_text(report));
  REQUIRE(lines.size() == 3 * 8 + 4);
  CHECK(lines[0] == "master 10.0.0.1:6379 (slots 0-5460)");
  CHECK_THAT(lines[1],
             Catch::StartsWith("ok      version      Redis 7.0.15 at "
                               "10.0.0.1:6379"));
  CHECK(lines[7].empty());
  CHECK(lines[8] == "master 10.0.0.2:6379 (slots 5461-10922)");
  CHECK(lines[24] == "cluster");
  CHECK_THAT(lines[25], Catch::StartsWith("ok      cluster      "));
  CHECK_THAT(lines[26], Catch::StartsWith("ok      replicas     "));
  CHECK_THAT(lines[27], Catch::StartsWith("ok      failover     "));
}

TEST_CASE("a Cluster's JSON: the Cluster's checks and masters[], no "
          "server") {
  const DeploymentFacts deployment{{}, cluster_topology()};
  const auto report = diagnose_all(cluster_facts(), timing(), deployment);
  const auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "ok");
  CHECK_FALSE(document.contains("server"));
  CHECK(document["checks"].size() == 3);
  REQUIRE(document["masters"].size() == 3);
  CHECK(document["masters"][2]["server"] == "10.0.0.3:6379");
  CHECK(document["masters"][2]["slots"] == "10923-16383");
  CHECK(document["masters"][2]["checks"].size() == 6);
}

TEST_CASE("a Cluster's report: one master's failing check fails that master, "
          "the whole and the exit code") {
  const DeploymentFacts deployment{{}, cluster_topology()};
  auto facts = cluster_facts();
  facts[2].info["role"] = "slave";
  const auto report =
      diagnose_all(facts, timing(), deployment, NamedLock{"a", "rlock:{a}"});
  CHECK(report.deployment.back().name == "name");
  CHECK(doctor_exit_code(report) == 1);
  const auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "fail");
  CHECK(document["masters"][0]["status"] == "ok");
  CHECK(document["masters"][2]["status"] == "fail");
  CHECK(document["checks"]["name"]["status"] == "ok");
}

TEST_CASE("a Cluster's report: a master that did not answer says why, in slot "
          "order whatever the order of the facts, and fails") {
  DeploymentFacts deployment{{}, cluster_topology()};
  auto facts = cluster_facts();
  std::swap(facts[0], facts[2]);
  facts.erase(facts.begin() + 1);
  std::get<lock::ClusterDeploymentState>(*deployment.topology).shards[1].error =
      "connection refused";
  const auto report = diagnose_all(facts, timing(), deployment);
  REQUIRE(report.servers.size() == 3);
  CHECK(report.servers[0].address == "10.0.0.1:6379");
  CHECK(report.servers[1].checks.empty());
  CHECK(report.servers[1].error == "connection refused");
  CHECK(report.servers[2].checks.size() == 6);
  CHECK(doctor_exit_code(report) == 1);
  const auto text = lines_of(format_doctor_text(report));
  CHECK(text[8]
        == "master 10.0.0.2:6379 (slots 5461-10922): did not answer "
           "(connection refused)");
  CHECK(text[9].empty());
  CHECK(text[10] == "master 10.0.0.3:6379 (slots 10923-16383)");
  const auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "fail");
  CHECK(document["masters"][0]["error"].is_null());
  CHECK(document["masters"][1]["status"] == "fail");
  CHECK(document["masters"][1]["error"] == "connection refused");
  CHECK(document["masters"][1]["checks"].empty());
}

TEST_CASE("a Cluster's report: a master whose facts are missing, though the "
          "slot map has no error for it, fails with no reason given") {
  DeploymentFacts deployment{{}, cluster_topology()};
  auto facts = cluster_facts();
  facts.erase(facts.begin() + 1);
  const auto report = diagnose_all(facts, timing(), deployment);
  CHECK(report.servers[1].error == "no reason given");
  CHECK(doctor_exit_code(report) == 1);
}

TEST_CASE("a Cluster's report: a Cluster check alone that warns exits 1") {
  DeploymentFacts deployment{{}, cluster_topology()};
  std::get<lock::ClusterDeploymentState>(*deployment.topology)
      .shards[0]
      .replicas.clear();
  const auto report = diagnose_all(cluster_facts(), timing(), deployment);
  CHECK(doctor_exit_code(report) == 1);
  CHECK(nlohmann::json::parse(format_doctor_json(report))["status"] == "warn");
}
