// rlock doctor's Sentinel checks (cli/doctor_sentinel.cpp), added to the
// master's.

#include <rlock/cli/doctor_checks.hpp>

#include <catch2/catch.hpp>

#include "doctor_facts.hpp"

using namespace doctor_facts;

TEST_CASE("sentinels: all naming the master, with a failover quorum, is ok") {
  const DeploymentFacts deployment{{}, sentinel_topology("1000")};
  const auto result = check(healthy(), "sentinels", timing(), deployment);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::StartsWith("2 of 2 sentinels name "));
}

TEST_CASE("sentinels: one naming another master warns") {
  DeploymentFacts deployment{{}, sentinel_topology("1000")};
  std::get<lock::SentinelDeploymentState>(*deployment.topology)
      .sentinels[0]
      .master = "10.0.0.2:6379";
  CHECK(check(healthy(), "sentinels", timing(), deployment).status
        == CheckStatus::warn);
}

TEST_CASE("sentinels: none able to reach a failover quorum fails "
          "(CKQUORUM)") {
  DeploymentFacts deployment{{}, sentinel_topology("1000")};
  std::get<lock::SentinelDeploymentState>(*deployment.topology)
      .sentinels[0]
      .master = "10.0.0.2:6379";
  std::get<lock::SentinelDeploymentState>(*deployment.topology)
      .sentinels[1]
      .error = "refused";
  std::get<lock::SentinelDeploymentState>(*deployment.topology)
      .sentinels[0]
      .quorum_check = "NOQUORUM 1 usable";
  const auto result = check(healthy(), "sentinels", timing(), deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("CKQUORUM"));
}

TEST_CASE("failover: down-after-milliseconds well within the TTL is ok") {
  const DeploymentFacts deployment{{}, sentinel_topology("1000")};
  CHECK(check(healthy(), "failover", timing(), deployment).status
        == CheckStatus::ok);
}

TEST_CASE("failover: down-after-milliseconds at the TTL fails, within 2s of "
          "it warns") {
  // Sentinel's default: detecting a dead master takes the whole TTL.
  const DeploymentFacts deployment{{}, sentinel_topology("30000")};
  const auto result = check(healthy(), "failover", timing(30s), deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::Contains("every failover would stop the command"));
  CHECK(check(healthy(), "failover", timing(31s), deployment).status
        == CheckStatus::warn);
  CHECK(check(healthy(), "failover", timing(60s), deployment).status
        == CheckStatus::ok);
}

TEST_CASE("no Sentinel: no sentinels or failover check") {
  CHECK(diagnose(healthy(), timing()).size() == 6);
}

TEST_CASE("name with Sentinel: the master the sentinels name") {
  const NamedLock lock{"deploy", "rlock:deploy"};
  const auto result =
      check_name(lock, "10.0.0.1:6379", {{}, sentinel_topology("1000")});
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:deploy' on 10.0.0.1:6379, the master "
           "the sentinels name 'mymaster'");
}
