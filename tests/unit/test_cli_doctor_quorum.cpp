// rlock doctor on a quorum of independent servers (Redlock,
// cli/doctor_quorum.cpp and the report's sections): each server's checks,
// then the quorum's.

#include <rlock/cli/doctor_checks.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "doctor_facts.hpp"
#include "lines.hpp"

using namespace doctor_facts;

TEST_CASE("did_not_answer: only a server with nothing but an address and "
          "why") {
  CHECK(did_not_answer(silent("10.0.0.1:6379")));
  CHECK_FALSE(did_not_answer(healthy()));
  // INFO, CONFIG GET and TIME refused: it still answered.
  auto refused = without_config_or_info(healthy());
  refused.clock_offset_ms.reset();
  refused.time_error = "NOPERM";
  CHECK_FALSE(did_not_answer(refused));
}

// quorum

TEST_CASE("quorum: every server answering is ok, saying how many more may "
          "go down") {
  const auto facts = quorum_facts();
  const auto result = check_quorum(facts, quorum_topology(facts));
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "5 servers, quorum 3, 5 answered: locks can be taken with 2 more "
           "down");
  CHECK(result.values["answered"] == 5);
}

TEST_CASE("quorum: just a quorum answering is ok, naming the silent ones") {
  auto facts = quorum_facts();
  facts[1] = silent(facts[1].address);
  facts[3] = silent(facts[3].address);
  const auto result = check_quorum(facts, quorum_topology(facts));
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "5 servers, quorum 3, 3 answered: one more down and no lock can be "
           "taken (10.0.0.2:6379, 10.0.0.4:6379 did not)");
}

TEST_CASE("quorum: fewer than a quorum answering fails") {
  auto facts = quorum_facts();
  for (const int i : {1, 3, 4}) {
    facts[i] = silent(facts[i].address);
  }
  const auto result = check_quorum(facts, quorum_topology(facts));
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("5 servers, quorum 3, 2 answered: no lock can "
                               "be taken or renewed until 1 more answer"));
  CHECK(result.values["silent"].size() == 3);
  // A larger quorum of the same servers.
  facts = quorum_facts();
  facts[0] = silent(facts[0].address);
  CHECK(check_quorum(facts, quorum_topology(facts, 5)).status
        == CheckStatus::fail);
}

// independent

TEST_CASE("independent: masters with distinct run_ids are ok") {
  const auto result = check_independent(quorum_facts());
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "the 5 servers that answered are masters with distinct run_ids, "
           "none a replica");
}

TEST_CASE("independent: replicas of another of them fail") {
  auto facts = quorum_facts();
  make_replica(facts[1], "10.0.0.1", 6379);
  make_replica(facts[2], "10.0.0.1", 6379);
  const auto result = check_independent(facts);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.2:6379 is a replica of 10.0.0.1:6379 "
                               "(another of them); 10.0.0.3:6379 is a replica "
                               "of 10.0.0.1:6379 (another of them): "));
}

TEST_CASE("independent: a replica of a server outside the quorum fails too") {
  auto facts = quorum_facts();
  make_replica(facts[4], "10.9.9.9", 6379);
  const auto result = check_independent(facts);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(
      result.message,
      Catch::StartsWith("10.0.0.5:6379 is a replica of 10.9.9.9:6379: "));
}

TEST_CASE("independent: one server named twice (one run_id) fails") {
  auto facts = quorum_facts();
  facts[3].info["run_id"] = facts[0].info["run_id"];
  const auto result = check_independent(facts);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.1:6379 and 10.0.0.4:6379 are one server "
                               "(run_id aaaa"));
}

TEST_CASE("independent: INFO refused on one is unknown; a silent server is "
          "not judged") {
  auto facts = quorum_facts();
  facts[2] = without_config_or_info(facts[2]);
  auto result = check_independent(facts);
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message,
             Catch::StartsWith("run_id or role unknown for 10.0.0.3:6379"));
  facts[2] = silent(facts[2].address);
  result = check_independent(facts);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::StartsWith("the 4 servers that answered"));
}

// restarts

TEST_CASE("restarts: every server keeping its locks (appendfsync always) is "
          "ok") {
  const auto result = check_restarts(quorum_facts(), timing(30s), 0s);
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "every server keeps its locks through a restart (appendonly yes, "
           "appendfsync always)");
}

TEST_CASE("restarts: servers that forget their locks warn when "
          "--restart-grace is below the TTL") {
  auto facts = quorum_facts();
  facts[0].config["appendfsync"] = "everysec";
  facts[3].config["appendonly"] = "no";
  const auto result = check_restarts(facts, timing(30s), 0s);
  CHECK(result.status == CheckStatus::warn);
  CHECK(result.message
        == "10.0.0.1:6379, 10.0.0.4:6379 forget their locks on a restart (not "
           "appendonly yes with appendfsync always) and --restart-grace 0s is "
           "below the 30s TTL: a restarted server can grant a held lock to a "
           "second holder; set --restart-grace to the TTL or more");
  // All of them: said so.
  for (auto& server : facts) {
    server.config["appendfsync"] = "everysec";
  }
  CHECK_THAT(check_restarts(facts, timing(30s), 0s).message,
             Catch::StartsWith("all 5 servers forget their locks on a "
                               "restart"));
}

TEST_CASE("restarts: servers that forget their locks are ok with "
          "--restart-grace at least the TTL") {
  auto facts = quorum_facts();
  facts[0].config["appendfsync"] = "everysec";
  facts[3].config["appendonly"] = "no";
  const auto result = check_restarts(facts, timing(30s), 30s);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::Contains(", but --restart-grace 30s is at least the 30s "
                             "TTL: a restarted server grants nothing until"));
  CHECK(result.values["each"][0]["keeps_locks"] == false);
}

TEST_CASE("restarts: a forgetting server up less than the TTL warns, whatever "
          "the grace; one that keeps its locks does not") {
  auto facts = quorum_facts();
  facts[0].config["appendfsync"] = "everysec";
  facts[3].config["appendonly"] = "no";
  facts[3].info["uptime_in_seconds"] = "5";
  const auto result = check_restarts(facts, timing(30s), 30s);
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::EndsWith("; 10.0.0.4:6379 up 5.0s, less than the 30s TTL: "
                             "one that restarted during a hold forgot the "
                             "locks it granted"));
  facts = quorum_facts();
  facts[3].info["uptime_in_seconds"] = "5";
  CHECK(check_restarts(facts, timing(30s), 0s).status == CheckStatus::ok);
}

TEST_CASE("restarts: CONFIG GET refused is unknown, unless INFO says the AOF "
          "is off") {
  auto facts = quorum_facts();
  facts[1] = without_config(facts[1]);
  const auto result = check_restarts(facts, timing(30s), 0s);
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.message == "persistence unknown for 10.0.0.2:6379");
  facts[1].info["aof_enabled"] = "0";
  CHECK(check_restarts(facts, timing(30s), 0s).status == CheckStatus::warn);
}

// clocks

TEST_CASE("clocks: within 1% of the TTL + 2ms of each other, at this host's "
          "rate, is ok") {
  auto facts = quorum_facts();
  const auto result = check_clocks(facts, timing(30s));
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::StartsWith("the servers' clocks are within 4.0ms of each "
                               "other, within the 302ms rlock allows for (1% "
                               "of the 30s TTL + 2ms)"));
  CHECK_THAT(result.message,
             Catch::EndsWith("; each ran at this host's rate within 0.04%"));
  CHECK(result.values["spread_ms"] == 4);
  // The same clock everywhere is two clocks that agree.
  for (auto& server : facts) {
    server.clock_offset_ms = 0;
  }
  CHECK(check_clocks(facts, timing(30s)).status == CheckStatus::ok);
}

TEST_CASE("clocks: further apart than 1% of the TTL + 2ms warns (1s TTL: "
          "12ms)") {
  auto facts = quorum_facts();
  CHECK(check_clocks(facts, timing(1s)).status == CheckStatus::ok);
  facts[4].clock_offset_ms = 11;
  const auto result = check_clocks(facts, timing(1s));
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("the clocks of 10.0.0.5:6379 and 10.0.0.1:6379 "
                               "differ by 13ms, more than the 12ms rlock "
                               "allows for"));
}

TEST_CASE("clocks: one that runs 2% fast warns, however the offsets look") {
  auto facts = quorum_facts();
  facts[2].clock_rate->server = 255ms;
  const auto result = check_clocks(facts, timing(30s));
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.3:6379's clock ran 2.00% fast against "
                               "this host's over 250ms: "));
  CHECK(result.values["each"][2]["rate_error_ppm"] == 20000);
}

TEST_CASE("clocks: a rate measured too roughly is not judged, and said so") {
  auto facts = quorum_facts();
  facts[2].clock_rate->server = 255ms;
  facts[2].clock_rate->uncertainty = 5ms;
  const auto result = check_clocks(facts, timing(30s));
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::EndsWith("; rate not measured for 10.0.0.3:6379"));
}

TEST_CASE("clocks: fewer than two telling their TIME is unknown") {
  auto facts = quorum_facts();
  for (std::size_t i = 1; i < facts.size(); ++i) {
    facts[i].clock_offset_ms.reset();
    facts[i].time_error = "NOPERM";
  }
  facts[1] = silent(facts[1].address);
  const auto result = check_clocks(facts, timing(1s));
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.message
        == "clocks unknown: fewer than two servers told their TIME "
           "(10.0.0.3:6379, 10.0.0.4:6379, 10.0.0.5:6379 refused it)");
}

// name

TEST_CASE("name on a quorum: on each server, held when a quorum agrees") {
  const auto facts = quorum_facts();
  const auto result = check_name(NamedLock{"deploy", "rlock:deploy"},
                                 facts[0].address,
                                 {{}, quorum_topology(facts)});
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:deploy' on each of the 5 servers, "
           "held when 3 of them agree");
}

// the report

TEST_CASE("a quorum's report: each server's six checks (no Sentinel's), then "
          "quorum, independent, restarts, clocks, name; all ok exits 0") {
  const auto facts = quorum_facts();
  const DeploymentFacts deployment{{}, quorum_topology(facts), 0s};
  const auto report =
      diagnose_all(facts, timing(), deployment, NamedLock{"a", "rlock:a"});
  CHECK(report.quorum);
  CHECK_FALSE(report.cluster);
  REQUIRE(report.servers.size() == 5);
  CHECK(report.servers[0].checks.size() == 6);
  std::vector<std::string> names;
  for (const auto& result : report.deployment) {
    names.push_back(result.name);
    INFO(result.name << ": " << result.message);
    CHECK(result.status == CheckStatus::ok);
  }
  CHECK(names
        == std::vector<std::string>{
            "quorum", "independent", "restarts", "clocks", "name"});
  CHECK(doctor_exit_code(report) == 0);
}

TEST_CASE("a quorum's text: a section per server, then 'redlock'") {
  const auto facts = quorum_facts();
  const DeploymentFacts deployment{{}, quorum_topology(facts), 0s};
  const auto report =
      diagnose_all(facts, timing(), deployment, NamedLock{"a", "rlock:a"});
  const auto lines = lines_of(format_doctor_text(report));
  REQUIRE(lines.size() == 5 * 8 + 6);
  CHECK(lines[0] == "server 10.0.0.1:6379");
  CHECK_THAT(lines[1], Catch::StartsWith("ok      version      Redis 7.0.15"));
  CHECK(lines[7].empty());
  CHECK(lines[8] == "server 10.0.0.2:6379");
  CHECK(lines[40] == "redlock");
  CHECK(lines[41]
        == "ok      quorum       5 servers, quorum 3, 5 answered: locks can "
           "be taken with 2 more down");
  CHECK_THAT(lines[42], Catch::StartsWith("ok      independent  "));
  CHECK_THAT(lines[45], Catch::StartsWith("ok      name         "));
}

TEST_CASE("a quorum's JSON: the quorum's checks and servers[], no masters "
          "nor slots") {
  const auto facts = quorum_facts();
  const DeploymentFacts deployment{{}, quorum_topology(facts), 0s};
  const auto report =
      diagnose_all(facts, timing(), deployment, NamedLock{"a", "rlock:a"});
  const auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "ok");
  CHECK_FALSE(document.contains("masters"));
  CHECK(document["checks"].size() == 5);
  REQUIRE(document["servers"].size() == 5);
  CHECK(document["servers"][4]["server"] == "10.0.0.5:6379");
  CHECK_FALSE(document["servers"][4].contains("slots"));
  CHECK(document["servers"][4]["checks"].size() == 6);
  CHECK(document["servers"][4]["error"].is_null());
}

TEST_CASE("a quorum's report: a silent server says it did not answer, a "
          "replica fails its checks and independent, exit 1") {
  auto facts = quorum_facts();
  const DeploymentFacts deployment{{}, quorum_topology(facts), 0s};
  facts[1] = silent(facts[1].address);
  make_replica(facts[2], "10.0.0.1", 6379);
  const auto report = diagnose_all(facts, timing(), deployment);
  CHECK(doctor_exit_code(report) == 1);
  const auto lines = lines_of(format_doctor_text(report));
  CHECK(lines[8]
        == "server 10.0.0.2:6379: did not answer (connection refused)");
  CHECK(lines[9].empty());
  CHECK(lines[10] == "server 10.0.0.3:6379");
  CHECK(report.deployment[0].status == CheckStatus::ok);
  CHECK(report.deployment[1].status == CheckStatus::fail);
  const auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "fail");
  CHECK(document["servers"][1]["status"] == "fail");
  CHECK(document["servers"][1]["error"] == "connection refused");
  CHECK(document["servers"][1]["checks"].empty());
  CHECK(document["servers"][2]["checks"]["replication"]["status"] == "fail");
  CHECK(document["checks"]["independent"]["status"] == "fail");
}

TEST_CASE("a quorum's report: a silent server alone exits 1, though the "
          "quorum holds") {
  auto facts = quorum_facts();
  const DeploymentFacts deployment{{}, quorum_topology(facts), 0s};
  facts[4] = silent(facts[4].address);
  const auto report = diagnose_all(facts, timing(), deployment);
  CHECK(report.deployment[0].status == CheckStatus::ok);
  CHECK(doctor_exit_code(report) == 1);
}
