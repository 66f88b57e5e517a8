#include <rlock/cli/status_view.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "lines.hpp"
#include <sstream>

using namespace rlock;

namespace {

lock::StatusSnapshot
sample() {
  lock::StatusSnapshot snapshot;
  snapshot.server_now_ms = 1'779'346'367'123 + 130'000;
  lock::LockState held;
  held.name = "deploy";
  held.key = "rlock:{deploy}";
  held.held = true;
  held.ttl_ms = 28'100;
  held.token = "00112233445566778899aabbccddeeff";
  held.fence = 42;
  held.host = "runner-3";
  held.pid = 4121;
  held.user = "ci";
  held.command = "./deploy.sh --prod";
  held.acquired_ms = 1'779'346'367'123;
  lock::LockState free;
  free.name = "backup";
  free.key = "rlock:{backup}";
  snapshot.locks = {held, free};
  return snapshot;
}

} // namespace

TEST_CASE("format_status_table aligns the columns") {
  const auto lines = lines_of(cli::format_status_table(sample()));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]
        == "NAME    HOLDER            HELD FOR  TTL    FENCE  COMMAND");
  CHECK(lines[1]
        == "deploy  ci@runner-3:4121  2m10s     28.1s  42     ./deploy.sh "
           "--prod");
  CHECK(lines[2] == "backup  -                 -         -      -      (free)");
}

TEST_CASE("format_status_table cuts the command to fit 80 columns") {
  auto snapshot = sample();
  snapshot.locks[0].command = std::string(200, 'c');
  snapshot.locks[0].ttl_ms = -1;
  const auto lines = lines_of(cli::format_status_table(snapshot));
  for (const auto& line : lines) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
  CHECK_THAT(lines[1], Catch::EndsWith("..."));
  CHECK_THAT(lines[1], Catch::Contains("none"));
}

TEST_CASE("format_status_table fits 80 columns with long names, holders "
          "and fences from the server's clock") {
  auto snapshot = sample();
  snapshot.locks[0].name = std::string(100, 'n');
  snapshot.locks[0].host = std::string(60, 'h');
  snapshot.locks[0].fence = 1'795'467'952'556'092;
  snapshot.locks[0].command = std::string(200, 'c');
  const auto lines = lines_of(cli::format_status_table(snapshot));
  for (const auto& line : lines) {
    INFO(line);
    CHECK(line.size() <= 80);
  }
  CHECK_THAT(lines[1], Catch::Contains("1795467952556092"));
  CHECK_THAT(lines[1], Catch::Contains("ccc"));
}

TEST_CASE("format_status_json has every field, and nulls for a free lock") {
  const auto json = nlohmann::json::parse(cli::format_status_json(sample()));
  REQUIRE(json.is_array());
  REQUIRE(json.size() == 2);
  const auto& held = json[0];
  CHECK(held["name"] == "deploy");
  CHECK(held["key"] == "rlock:{deploy}");
  CHECK(held["held"] == true);
  CHECK(held["ttl_ms"] == 28100);
  CHECK(held["token"] == "00112233445566778899aabbccddeeff");
  CHECK(held["fence"] == 42);
  CHECK(held["owner"]
        == nlohmann::json{{"host", "runner-3"}, {"pid", 4121}, {"user", "ci"}});
  CHECK(held["command"] == "./deploy.sh --prod");
  CHECK(held["acquired_at"] == "2026-05-21T06:52:47.123Z");
  const auto& free = json[1];
  CHECK(free["held"] == false);
  for (const char* field :
       {"ttl_ms", "token", "fence", "owner", "command", "acquired_at"}) {
    INFO(field);
    CHECK(free[field].is_null());
  }
}

TEST_CASE("format_status_json survives bytes that are not UTF-8") {
  auto snapshot = sample();
  snapshot.locks[0].command = "\xff\xfe";
  CHECK_NOTHROW(nlohmann::json::parse(cli::format_status_json(snapshot)));
}

TEST_CASE("format_status_table cuts long names in the middle, and only then") {
  auto snapshot = sample();
  snapshot.locks[0].name = std::string(40, 'n') + "-A";
  snapshot.locks[1].name = std::string(40, 'n') + "-B";
  const auto lines = lines_of(cli::format_status_table(snapshot));
  CHECK_THAT(lines[1], Catch::StartsWith("nnnnnnnnnnn...nnnnnnnn-A  "));
  CHECK_THAT(lines[2], Catch::StartsWith("nnnnnnnnnnn...nnnnnnnn-B  "));
  for (const auto& line : lines) {
    CHECK(line.size() <= 80);
  }
  // Wide enough: nothing is cut.
  const auto wide = lines_of(cli::format_status_table(snapshot, 200));
  CHECK_THAT(wide[1], Catch::StartsWith(std::string(40, 'n') + "-A"));
}

TEST_CASE("format_status_table shows a multi-line command on one line") {
  auto snapshot = sample();
  snapshot.locks[0].command = "/bin/sh -c '\n  sleep 7\n'";
  const auto lines = lines_of(cli::format_status_table(snapshot, 200));
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[1], Catch::Contains("/bin/sh -c '\\n  sleep 7\\n'"));
}

namespace {

lock::ClusterShardState
shard(const std::string& master, int first, int last) {
  lock::ClusterShardState shard;
  shard.master = master;
  shard.slots = last - first + 1;
  shard.slot_spans = {{first, last}};
  shard.cluster_info = {{"cluster_state", "ok"}};
  shard.node_timeout_ms = 5000;
  return shard;
}

lock::ClusterDeploymentState
cluster() {
  lock::ClusterDeploymentState state;
  state.shards = {shard("127.0.0.1:7000", 0, 5460),
                  shard("127.0.0.1:7001", 5461, 10922),
                  shard("127.0.0.1:7002", 10923, 16383)};
  state.shards[0].replicas = {{"127.0.0.1:7003", "online", 0}};
  state.shards[1].replicas = {{"127.0.0.1:7004", "online", 1},
                              {"127.0.0.1:7005", "wait_bgsave", 3}};
  return state;
}

} // namespace

TEST_CASE("format_topology_line: a Cluster's masters, replicas and slots") {
  auto state = cluster();
  CHECK(cli::format_topology_line(state)
        == "cluster: 3 masters, all 16384 slots served; 127.0.0.1:7000: 5461 "
           "slots, 1 replica, lag 0s; 127.0.0.1:7001: 5462 slots, 2 replicas "
           "(1 online), lag up to 3s; 127.0.0.1:7002: 5461 slots, no "
           "replica\n");
  state.shards[2].error = "connection refused";
  state.shards[1].slots = 1;
  state.shards[0].replicas[0].lag_s = -1;
  state.uncovered_slots = {{5462, 10922}, {12000, 12000}};
  CHECK(cli::format_topology_line(state)
        == "cluster: 3 masters, slots 5462-10922, 12000 served by no master; "
           "127.0.0.1:7000: 5461 slots, 1 replica; 127.0.0.1:7001: 1 slot, 2 "
           "replicas (1 online), lag up to 3s; 127.0.0.1:7002: 5461 slots, "
           "did not answer\n");
}

TEST_CASE("format_topology_line: Sentinel") {
  lock::SentinelDeploymentState state;
  state.master_name = "mymaster";
  state.master = "127.0.0.1:7000";
  state.sentinels = {{"127.0.0.1:26380", "127.0.0.1:7000", {}, "OK", ""},
                     {"127.0.0.1:26381", "", {}, "", "refused"}};
  CHECK(cli::format_topology_line(state)
        == "sentinel: master 'mymaster' 127.0.0.1:7000 (1 of 2 sentinels "
           "agree); no replicas\n");
  state.replicas = {{"127.0.0.1:7001", "online", 0}};
  CHECK_THAT(cli::format_topology_line(state),
             Catch::EndsWith("; replicas 127.0.0.1:7001 online lag 0s\n"));
}

TEST_CASE("format_status_json: node and slot") {
  auto snapshot = sample();
  auto json = nlohmann::json::parse(cli::format_status_json(snapshot));
  CHECK_FALSE(json[0].contains("node"));
  CHECK_FALSE(json[0].contains("slot"));
  // Sentinel: the master for every lock.
  json = nlohmann::json::parse(
      cli::format_status_json(snapshot, "127.0.0.1:7000"));
  CHECK(json[0]["node"] == "127.0.0.1:7000");
  CHECK(json[1]["node"] == "127.0.0.1:7000");
  CHECK_FALSE(json[1].contains("slot"));
  // Cluster: each lock's own master and slot.
  snapshot.locks[0].cluster = lock::ClusterPlace{"127.0.0.1:7001", 6000};
  snapshot.locks[1].cluster = lock::ClusterPlace{"127.0.0.1:7002", 0};
  json = nlohmann::json::parse(cli::format_status_json(snapshot));
  CHECK(json[0]["node"] == "127.0.0.1:7001");
  CHECK(json[0]["slot"] == 6000);
  CHECK(json[1]["node"] == "127.0.0.1:7002");
  CHECK(json[1]["slot"] == 0);
  CHECK(json[1]["waiters"] == 0);
}

TEST_CASE("a quorum's status: the redlock line, SERVERS out of all the "
          "servers, split, and each server in --json's nodes") {
  auto snapshot = sample();
  snapshot.servers = 5;
  snapshot.quorum = 3;
  auto& held = snapshot.locks[0];
  auto& view = held.quorum.emplace();
  view.agreed = true;
  for (const char* server : {"a:1", "b:2", "c:3", "d:4"}) {
    view.servers.push_back({server, true, held.token, 20'000, 42, {}});
  }
  view.servers.push_back({"e:5", false, {}, -1, 0, "connection refused"});
  auto lines = lines_of(cli::format_status_table(snapshot, 200));
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Catch::Contains("FENCE") && Catch::Contains("SERVERS"));
  CHECK_THAT(lines[1], Catch::Contains(" 4/5 "));
  view.servers[3].token = "another";
  lines = lines_of(cli::format_status_table(snapshot, 200));
  CHECK_THAT(lines[1], Catch::Contains(" 3/5 split "));

  const auto json =
      nlohmann::json::parse(cli::format_status_json(snapshot, ""));
  CHECK(json[0]["quorum"] == true);
  REQUIRE(json[0]["nodes"].size() == 5);
  CHECK(json[0]["nodes"][0]["node"] == "a:1");
  CHECK(json[0]["nodes"][0]["fence"] == 42);
  CHECK(json[0]["nodes"][4]["held"] == false);
  CHECK(json[0]["nodes"][4]["token"].is_null());
  CHECK(json[0]["nodes"][4]["error"] == "connection refused");

  lock::QuorumDeploymentState state;
  state.quorum = 3;
  state.servers = {{"a:1", {}}, {"b:2", {}}, {"c:3", "refused"}};
  CHECK(cli::format_topology_line(state)
        == "redlock: 3 servers, quorum 3, 2 reachable; down: c:3\n");
}
