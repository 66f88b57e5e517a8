#include <rlock/cli/doctor_checks.hpp>
#include <rlock/cli/parser.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "lines.hpp"
#include <sstream>

using namespace std::chrono_literals;
using namespace rlock;
using namespace rlock::cli;
using rlock::lock::parse_info;

namespace {

// A healthy server as CONFIG GET and INFO describe it.
ServerFacts
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

lock::LeaseTiming
timing(Duration ttl = 30s) {
  return lock::make_timing(ttl, std::nullopt).value();
}

CheckResult
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
ServerFacts
without_config(ServerFacts facts) {
  facts.config.clear();
  facts.config_error = "NOPERM this user has no permissions to run the "
                       "'config|get' command";
  return facts;
}

ServerFacts
without_config_or_info(ServerFacts facts) {
  facts = without_config(facts);
  facts.info.clear();
  facts.info_error = "NOPERM no 'info'";
  return facts;
}

ParsedCommand
parse(std::vector<std::string> args) {
  return parse_command_line(args, Environment{});
}

} // namespace

TEST_CASE("parse_info") {
  const auto fields =
      parse_info("# Server\r\nredis_version:7.0.15\r\nexecutable:/usr/bin/r"
                 "\r\nconfig_file:\r\n\r\n# Replication\r\nrole:slave\r\n"
                 "master_host:::1\r\nno colon here\r\n");
  CHECK(fields.at("redis_version") == "7.0.15");
  CHECK(fields.at("executable") == "/usr/bin/r");
  CHECK(fields.at("config_file").empty());
  CHECK(fields.at("role") == "slave");
  CHECK(fields.at("master_host") == "::1");
  CHECK(fields.size() == 5);
  CHECK(parse_info("").empty());
  CHECK(parse_info("a:1\nb:2").at("b") == "2");
}

TEST_CASE("parse_version") {
  CHECK(parse_version("7.0.15") == std::vector<int>{7, 0, 15});
  CHECK(parse_version("6.2.6-rc1") == std::vector<int>{6, 2, 6});
  CHECK(parse_version("4") == std::vector<int>{4, 0, 0});
  CHECK(parse_version("3.2") == std::vector<int>{3, 2, 0});
  CHECK_FALSE(parse_version(""));
  CHECK_FALSE(parse_version("v7"));
}

TEST_CASE("diagnose: a healthy server passes every check, in order") {
  const auto checks = diagnose(healthy(), timing());
  std::vector<std::string> names;
  for (const auto& result : checks) {
    names.push_back(result.name);
    INFO(result.name << ": " << result.message);
    CHECK(result.status == CheckStatus::ok);
  }
  CHECK(names
        == std::vector<std::string>{"version",
                                    "eviction",
                                    "persistence",
                                    "replication",
                                    "latency",
                                    "clock"});
  CHECK(doctor_exit_code(checks) == 0);
}

TEST_CASE("diagnose: version") {
  auto facts = healthy();
  CHECK(check(facts, "version").message.find("Redis 7.0.15 at 127.0.0.1:6379")
        == 0);
  facts.version = "4.0.0";
  CHECK(check(facts, "version").status == CheckStatus::ok);
  facts.version = "3.2.12";
  const auto old = check(facts, "version");
  CHECK(old.status == CheckStatus::fail);
  CHECK_THAT(old.message, Catch::Contains("too old"));
  CHECK_THAT(old.message, Catch::Contains("4.0 or later"));
  CHECK(old.values["redis_version"] == "3.2.12");
  CHECK(old.values["minimum"] == "4.0.0");
  facts.version = "7.0.15";
  facts.script_error = "NOPERM no 'eval'";
  const auto refused = check(facts, "version");
  CHECK(refused.status == CheckStatus::fail);
  CHECK_THAT(refused.message, Catch::Contains("EVAL: NOPERM no 'eval'"));
  CHECK(refused.values["scripts_run"] == false);
  facts.script_error.clear();
  facts.version.clear();
  const auto unknown = check(facts, "version");
  CHECK(unknown.status == CheckStatus::unknown);
  CHECK(unknown.values["redis_version"].is_null());
}

TEST_CASE("diagnose: eviction") {
  auto facts = healthy();
  CHECK_THAT(check(facts, "eviction").message,
             Catch::StartsWith("maxmemory-policy noeviction: "));
  facts.config["maxmemory"] = "104857600";
  facts.config["maxmemory-policy"] = "volatile-lru";
  auto result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("maxmemory-policy volatile-lru with maxmemory "
                               "100mb: "));
  CHECK_THAT(result.message, Catch::Contains("every lock key has one"));
  CHECK(result.values["maxmemory"] == 104857600);
  CHECK(result.values["source"] == "CONFIG GET");
  facts.config["maxmemory-policy"] = "allkeys-lfu";
  result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("any key"));
  // No limit, no eviction: fine today, said plainly.
  facts.config["maxmemory"] = "0";
  result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::Contains("maxmemory is 0"));
  CHECK_THAT(result.message, Catch::Contains("prefer noeviction"));
  facts.config["maxmemory"] = "1000";
  CHECK_THAT(check(facts, "eviction").message,
             Catch::Contains("maxmemory 1000 bytes"));
}

TEST_CASE("diagnose: eviction falls back to INFO, then says unknown") {
  auto facts = without_config(healthy());
  facts.info["maxmemory_policy"] = "volatile-ttl";
  facts.info["maxmemory"] = "1073741824";
  auto result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::Contains("volatile-ttl with maxmemory 1gb"));
  CHECK_THAT(result.message, Catch::Contains("(from INFO"));
  CHECK(result.values["source"] == "INFO");
  result = check(without_config_or_info(healthy()), "eviction");
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("CONFIG GET refused (NOPERM"));
  CHECK_THAT(result.message,
             Catch::Contains("INFO refused (NOPERM no 'info')"));
  CHECK(result.values["maxmemory_policy"].is_null());
  CHECK(result.values["source"].is_null());
}

TEST_CASE("diagnose: persistence") {
  auto facts = healthy();
  CHECK_THAT(check(facts, "persistence").message,
             Catch::StartsWith("appendonly yes, appendfsync everysec: "));
  facts.config["appendfsync"] = "always";
  CHECK(check(facts, "persistence").status == CheckStatus::ok);
  facts.config["appendfsync"] = "no";
  CHECK(check(facts, "persistence").status == CheckStatus::warn);
  facts.config["appendonly"] = "no";
  auto result = check(facts, "persistence");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::StartsWith("appendonly no, save \"\": "));
  CHECK_THAT(result.message, Catch::Contains("a restart empties Redis"));
  CHECK(result.values["save"] == "");
  facts.config["save"] = "3600 1";
  result = check(facts, "persistence");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("RDB snapshots only"));
  CHECK_THAT(result.message,
             Catch::Contains("(last save 12.0s ago, 3 changes since)"));
  CHECK(result.values["rdb_changes_since_last_save"] == 3);
}

TEST_CASE("diagnose: persistence falls back to INFO, then says unknown") {
  auto facts = without_config(healthy());
  auto result = check(facts, "persistence");
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::Contains("appendfsync unknown"));
  CHECK(result.values["appendonly"] == "yes");
  CHECK(result.values["appendfsync"].is_null());
  CHECK(result.values["source"] == "INFO");
  facts.info["aof_enabled"] = "0";
  result = check(facts, "persistence");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("save unknown"));
  result = check(without_config_or_info(healthy()), "persistence");
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.values["appendonly"].is_null());
}

// A Sentinel deployment whose three sentinels agree, with a failover
// detected after `down_after_ms`.
lock::DeploymentState
sentinel_topology(const std::string& down_after_ms) {
  lock::DeploymentState state;
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

TEST_CASE("diagnose: replication with --replicas") {
  using Mode = lock::ReplicaPolicy::Mode;
  auto facts = healthy();
  facts.info["connected_slaves"] = "2";
  auto result =
      check(facts, "replication", timing(), {{Mode::automatic, 0}, {}});
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::Contains("waits until 1 of them has it"));
  CHECK(result.values["required_confirmations"] == 1);
  facts.wait_probe = lock::WaitProbe{2, 2, 300us};
  facts.config["min-replicas-to-write"] = "1";
  result = check(facts, "replication", timing(), {{Mode::automatic, 0}, {}});
  CHECK_THAT(result.message,
             Catch::EndsWith("; WAIT 2: 2 confirmed in 0.30ms; "
                             "min-replicas-to-write 1: the master refuses "
                             "writes with fewer replicas"));
  CHECK(result.values["wait_probe"]["confirmed"] == 2);
  CHECK(result.values["min_replicas_to_write"] == 1);
  facts.wait_probe = lock::WaitProbe{2, 0, 1s};
  result = check(facts, "replication", timing(), {{Mode::automatic, 0}, {}});
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("acquires fail now"));
  facts.wait_probe.reset();
  result = check(facts, "replication", timing(), {{Mode::count, 3}, {}});
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("every acquire would fail"));
  facts.info["connected_slaves"] = "0";
  CHECK(check(facts, "replication", timing(), {{Mode::automatic, 0}, {}}).status
        == CheckStatus::ok);
}

TEST_CASE("diagnose: sentinels and failover time against the TTL") {
  const auto facts = healthy();
  DeploymentFacts deployment{{}, sentinel_topology("1000")};
  auto result = check(facts, "sentinels", timing(), deployment);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::StartsWith("2 of 2 sentinels name "));
  result = check(facts, "failover", timing(), deployment);
  CHECK(result.status == CheckStatus::ok);
  // Sentinel's default: detecting a dead master takes the whole TTL.
  deployment.topology = sentinel_topology("30000");
  result = check(facts, "failover", timing(30s), deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::Contains("every failover would stop the command"));
  CHECK(check(facts, "failover", timing(31s), deployment).status
        == CheckStatus::warn);
  CHECK(check(facts, "failover", timing(60s), deployment).status
        == CheckStatus::ok);
  // One sentinel names another master, one does not answer.
  deployment.topology->sentinels[0].master = "10.0.0.2:6379";
  CHECK(check(facts, "sentinels", timing(), deployment).status
        == CheckStatus::warn);
  deployment.topology->sentinels[1].error = "refused";
  deployment.topology->sentinels[0].quorum_check = "NOQUORUM 1 usable";
  result = check(facts, "sentinels", timing(), deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("CKQUORUM"));
  // No sentinel checks without Sentinel.
  CHECK(diagnose(facts, timing()).size() == 6);
}

TEST_CASE("diagnose: replication") {
  auto facts = healthy();
  facts.info["connected_slaves"] = "2";
  auto result = check(facts, "replication");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::StartsWith("master with 2 replicas: "));
  CHECK_THAT(result.message, Catch::Contains("WAIT"));
  CHECK(result.values["connected_replicas"] == 2);
  facts.info = {{"role", "slave"},
                {"master_host", "10.0.0.1"},
                {"master_port", "6380"},
                {"master_link_status", "up"}};
  result = check(facts, "replication");
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("replica of 10.0.0.1:6380 (link up): "));
  CHECK_THAT(result.message, Catch::Contains("READONLY"));
  CHECK(result.values["master_port"] == 6380);
  facts.info = {{"role", "sentinel"}};
  CHECK(check(facts, "replication").status == CheckStatus::fail);
  result = check(without_config_or_info(healthy()), "replication");
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.values["role"].is_null());
}

TEST_CASE("diagnose: latency against the TTL's margin") {
  auto facts = healthy();
  auto result = check(facts, "latency");
  CHECK_THAT(result.message,
             Catch::StartsWith("round trip median 0.20ms, max 0.30ms over 5 "
                               "PINGs: within the 305ms margin of a 30s TTL"));
  CHECK(result.values["rtt_median_ms"] == 0.2);
  CHECK(result.values["rtt_max_ms"] == 0.3);
  CHECK(result.values["ttl_ms"] == 30000);
  CHECK(result.values["margin_ms"] == 305);
  // The margin itself is still ok; a microsecond more is not.
  facts.round_trips = {1ms, 305ms};
  result = check(facts, "latency");
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.values["rtt_median_ms"] == 153);
  facts.round_trips = {1ms, 305001us};
  result = check(facts, "latency");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("more than the 305ms margin"));
  CHECK_THAT(result.message, Catch::Contains("--ttl"));
  // A shorter --ttl has a smaller margin: 1s -> 15ms.
  facts.round_trips = {20ms};
  CHECK(check(facts, "latency", timing(1s)).status == CheckStatus::warn);
  CHECK(check(facts, "latency", timing(5s)).status == CheckStatus::ok);
  // A round trip of TTL/3 leaves no time to renew.
  facts.round_trips = {10s};
  result = check(facts, "latency");
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("TTL/3"));
  facts.round_trips.clear();
  CHECK(check(facts, "latency").status == CheckStatus::unknown);
}

TEST_CASE("diagnose: clock offset") {
  auto facts = healthy();
  facts.clock_offset_ms = 1000;
  CHECK(check(facts, "clock").status == CheckStatus::ok);
  // Leases do depend on the server's wall clock: no claim otherwise.
  CHECK_THAT(check(facts, "clock").message,
             Catch::Contains("Redis expires leases by its wall clock"));
  facts.clock_offset_ms = 1001;
  auto result = check(facts, "clock");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("the server's clock is 1.0s "
                               "ahead of this host's"));
  CHECK_THAT(result.message, Catch::Contains("--once-per"));
  CHECK_THAT(result.message, Catch::Contains("cut short by the step"));
  CHECK(result.values["offset_ms"] == 1001);
  facts.clock_offset_ms = -2500;
  result = check(facts, "clock");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("2.5s behind"));
  facts.clock_offset_ms.reset();
  facts.time_error = "NOPERM no 'time'";
  result = check(facts, "clock");
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("NOPERM no 'time'"));
  CHECK(result.values["offset_ms"].is_null());
}

TEST_CASE("format_doctor_text: one aligned line per check") {
  auto facts = healthy();
  facts.config["appendonly"] = "no";
  facts.info_error = "bad\nline";
  facts.info.clear();
  facts.config_error = "x";
  facts.config.erase("maxmemory-policy");
  const auto lines = lines_of(format_doctor_text(diagnose(facts, timing())));
  REQUIRE(lines.size() == 6);
  CHECK_THAT(lines[0], Catch::StartsWith("ok      version      Redis 7.0.15"));
  CHECK_THAT(lines[1], Catch::StartsWith("unknown eviction     "));
  CHECK_THAT(lines[1], Catch::Contains("bad\\nline"));
  CHECK_THAT(lines[2], Catch::StartsWith("warn    persistence  appendonly no"));
  CHECK_THAT(lines[3], Catch::StartsWith("unknown replication  role unknown"));
  CHECK_THAT(lines[4], Catch::StartsWith("ok      latency      round trip"));
  CHECK_THAT(lines[5], Catch::StartsWith("ok      clock        the server's"));
}

TEST_CASE("format_doctor_json: server, worst status, one entry per check") {
  auto facts = healthy();
  auto document = nlohmann::json::parse(
      format_doctor_json(facts.address, diagnose(facts, timing())));
  CHECK(document["server"] == "127.0.0.1:6379");
  CHECK(document["status"] == "ok");
  REQUIRE(document["checks"].size() == 6);
  for (const auto& [name, entry] : document["checks"].items()) {
    INFO(name);
    CHECK(entry.size() == 3);
    CHECK(entry["status"] == "ok");
    CHECK(entry["message"].is_string());
    CHECK(entry["values"].is_object());
  }
  CHECK(document["checks"]["eviction"]["values"]["maxmemory_policy"]
        == "noeviction");
  facts.info["connected_slaves"] = "1";
  document = nlohmann::json::parse(
      format_doctor_json(facts.address, diagnose(facts, timing())));
  CHECK(document["status"] == "warn");
  facts.info["role"] = "slave";
  facts.clock_offset_ms.reset();
  const auto checks = diagnose(facts, timing());
  document = nlohmann::json::parse(format_doctor_json(facts.address, checks));
  CHECK(document["status"] == "fail");
  CHECK(document["checks"]["clock"]["status"] == "unknown");
  CHECK(doctor_exit_code(checks) == 1);
}

TEST_CASE("doctor_exit_code: 0 only when every check is ok") {
  auto checks = diagnose(healthy(), timing());
  CHECK(doctor_exit_code(checks) == 0);
  for (auto status :
       {CheckStatus::warn, CheckStatus::fail, CheckStatus::unknown}) {
    auto changed = checks;
    changed.back().status = status;
    CHECK(doctor_exit_code(changed) == 1);
  }
}

TEST_CASE("parse_command_line: doctor") {
  auto command = parse({"doctor"});
  REQUIRE(std::holds_alternative<DoctorOptions>(command));
  CHECK(std::get<DoctorOptions>(command).timing.ttl == 30s);
  CHECK(std::get<DoctorOptions>(command).timing.margin == 305ms);
  CHECK_FALSE(std::get<DoctorOptions>(command).json);
  command = parse({"--url", "redis://h:1", "doctor", "--json", "-t", "5s"});
  REQUIRE(std::holds_alternative<DoctorOptions>(command));
  const auto& options = std::get<DoctorOptions>(command);
  CHECK(options.json);
  CHECK(options.timing.ttl == 5s);
  CHECK(std::get<rlock::lock::Single>(options.server.topology).endpoint.port
        == 1);
  CHECK_FALSE(options.name);
  command = parse({"doctor", "deploy", "--json"});
  REQUIRE(std::holds_alternative<DoctorOptions>(command));
  CHECK(std::get<DoctorOptions>(command).name == "deploy");
  CHECK_THROWS_AS(parse({"doctor", ""}), Error);
  CHECK(std::holds_alternative<InfoRequest>(parse({"doctor", "--help"})));
  // A lock named doctor needs --, as for any subcommand.
  CHECK(std::holds_alternative<RunOptions>(parse({"--", "doctor", "true"})));
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"doctor", "one", "two"},
                                             {"doctor", "--ttl", "50ms"},
                                             {"doctor", "--ttl", "0"},
                                             {"doctor", "--wide"},
                                             {"-n", "doctor"}}) {
    INFO(args.back());
    CHECK_THROWS_AS(parse(args), Error);
  }
}

namespace {

lock::ClusterShardState
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
lock::DeploymentState
cluster_topology() {
  lock::DeploymentState state;
  state.shards = {shard("10.0.0.1:6379", 0, 5460),
                  shard("10.0.0.2:6379", 5461, 10922),
                  shard("10.0.0.3:6379", 10923, 16383)};
  return state;
}

std::vector<ServerFacts>
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

} // namespace

TEST_CASE("check_cluster") {
  auto topology = cluster_topology();
  auto result = check_cluster(topology);
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "cluster_state ok on all 3 masters, all 16384 slots served, 6 "
           "nodes known");
  CHECK(result.values["each"].size() == 3);
  // A master that sees slots failing, one that knows another node.
  topology.shards[1].cluster_info["cluster_slots_ok"] = "10922";
  topology.shards[2].cluster_info["cluster_known_nodes"] = "7";
  result = check_cluster(topology);
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::Contains("10.0.0.2:6379 sees 10922 of 16384 slots ok"));
  CHECK_THAT(result.message,
             Catch::Contains("6 at 10.0.0.1:6379, 6 at 10.0.0.2:6379, 7 at "
                             "10.0.0.3:6379"));
  // cluster_state fail, slots no master serves, a master that did not answer.
  topology = cluster_topology();
  topology.shards[0].cluster_info["cluster_state"] = "fail";
  result = check_cluster(topology);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.1:6379 says cluster_state fail"));
  topology = cluster_topology();
  topology.uncovered_slots = {{100, 199}};
  result = check_cluster(topology);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("slots 100-199 are served by no master"));
  CHECK(result.values["uncovered_slots"] == "100-199");
  topology = cluster_topology();
  topology.shards[2].error = "connection refused";
  result = check_cluster(topology);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.3:6379 did not answer (connection "
                               "refused)"));
  // No master told its state.
  topology = cluster_topology();
  for (auto& each : topology.shards) {
    each.cluster_info.clear();
  }
  result = check_cluster(topology);
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::StartsWith("cluster_state unknown"));
}

TEST_CASE("check_cluster_replicas") {
  auto topology = cluster_topology();
  topology.shards[1].replicas[0].lag_s = 2;
  auto result = check_cluster_replicas(topology);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::StartsWith("every master has a replica online (lag up to "
                               "2s)"));
  CHECK(result.values["worst_lag_s"] == 2);
  // A master that did not answer: its replicas are unknown.
  topology.shards[0].error = "timed out";
  result = check_cluster_replicas(topology);
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("10.0.0.1:6379"));
  // No replica, or one that is still syncing.
  topology.shards[1].replicas.clear();
  topology.shards[2].replicas[0].state = "wait_bgsave";
  result = check_cluster_replicas(topology);
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("no replica online for 10.0.0.2:6379 (5462 "
                               "slots), 10.0.0.3:6379 (5461 slots): "));
}

TEST_CASE("check_cluster_failover: cluster-node-timeout against the TTL") {
  auto topology = cluster_topology();
  auto result = check_cluster_failover(topology, timing(30s));
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::StartsWith("a failover takes cluster-node-timeout (5s)"));
  CHECK(result.values["node_timeout_ms"] == 5000);
  // Redis's default, 15s, with a 15s TTL: the largest timeout counts.
  topology.shards[1].node_timeout_ms = 15000;
  result = check_cluster_failover(topology, timing(15s));
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
  // CONFIG GET refused (-1) on every master, as a managed service does.
  for (auto& each : topology.shards) {
    each.node_timeout_ms = -1;
  }
  result = check_cluster_failover(topology, timing());
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("CONFIG GET refused"));
  CHECK(result.values["node_timeout_ms"].is_null());
  // Refused on one: the others' count.
  topology.shards[2].node_timeout_ms = 30000;
  CHECK(check_cluster_failover(topology, timing(30s)).status
        == CheckStatus::fail);
}

TEST_CASE("check_name: a Cluster's slot and master") {
  DeploymentFacts deployment{{}, cluster_topology()};
  // CLUSTER KEYSLOT rlock:{deploy} is 15335 (the tag "deploy").
  const NamedLock lock{"deploy", "rlock:{deploy}"};
  auto result = check_name(lock, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:{deploy}' in slot 15335, served by "
           "10.0.0.3:6379 (replica 10.0.1.1:6379 online lag 0s)");
  CHECK(result.values["slot"] == 15335);
  CHECK(result.values["master"] == "10.0.0.3:6379");
  // Served by a master that says the cluster is down.
  deployment.topology->shards[2].cluster_info["cluster_state"] = "fail";
  result = check_name(lock, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::EndsWith("which says cluster_state fail: the lock cannot "
                             "be taken now (CLUSTERDOWN)"));
  // Served by a master that did not answer.
  deployment.topology->shards[2].error = "connection refused";
  result = check_name(lock, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::EndsWith("which did not answer (connection "
                             "refused)"));
  // Served by none.
  deployment.topology->shards.pop_back();
  deployment.topology->uncovered_slots = {{10923, 16383}};
  result = check_name(lock, "10.0.0.1:6379", deployment);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("which no master serves"));
  CHECK(result.values["master"].is_null());
}

TEST_CASE("check_name: one server and Sentinel") {
  const NamedLock lock{"deploy", "rlock:deploy"};
  auto result = check_name(lock, "127.0.0.1:6379", {});
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:deploy' on 127.0.0.1:6379");
  CHECK(result.values["slot"].is_null());
  result = check_name(lock, "10.0.0.1:6379", {{}, sentinel_topology("1000")});
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:deploy' on 10.0.0.1:6379, the master "
           "the sentinels name 'mymaster'");
}

TEST_CASE("diagnose_all: one server, with NAME") {
  const auto report = diagnose_all(
      {healthy()}, timing(), {}, NamedLock{"deploy", "rlock:deploy"});
  CHECK_FALSE(report.cluster);
  REQUIRE(report.servers.size() == 1);
  CHECK(report.servers[0].checks.size() == 6);
  REQUIRE(report.deployment.size() == 1);
  const auto lines = lines_of(format_doctor_text(report));
  REQUIRE(lines.size() == 7);
  CHECK_THAT(lines[6], Catch::StartsWith("ok      name         lock 'deploy'"));
  const auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["server"] == "127.0.0.1:6379");
  CHECK(document["status"] == "ok");
  CHECK(document["checks"].size() == 7);
  CHECK(document["checks"]["name"]["values"]["key"] == "rlock:deploy");
  CHECK(doctor_exit_code(report) == 0);
}

TEST_CASE("diagnose_all: a Cluster, each master then the cluster") {
  DeploymentFacts deployment{{}, cluster_topology()};
  auto report = diagnose_all(cluster_facts(), timing(), deployment);
  CHECK(report.cluster);
  REQUIRE(report.servers.size() == 3);
  CHECK(report.servers[1].slots == "5461-10922");
  std::vector<std::string> names;
  for (const auto& result : report.deployment) {
    names.push_back(result.name);
  }
  // No sentinel checks on a Cluster.
  CHECK(names == std::vector<std::string>{"cluster", "replicas", "failover"});
  CHECK(report.servers[0].checks.size() == 6);
  CHECK(doctor_exit_code(report) == 0);
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
  auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "ok");
  CHECK_FALSE(document.contains("server"));
  CHECK(document["checks"].size() == 3);
  REQUIRE(document["masters"].size() == 3);
  CHECK(document["masters"][2]["server"] == "10.0.0.3:6379");
  CHECK(document["masters"][2]["slots"] == "10923-16383");
  CHECK(document["masters"][2]["checks"].size() == 6);
  // One master's check fails: its status, the top status and the exit code.
  auto facts = cluster_facts();
  facts[2].info["role"] = "slave";
  report =
      diagnose_all(facts, timing(), deployment, NamedLock{"a", "rlock:{a}"});
  CHECK(report.deployment.back().name == "name");
  CHECK(doctor_exit_code(report) == 1);
  document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "fail");
  CHECK(document["masters"][0]["status"] == "ok");
  CHECK(document["masters"][2]["status"] == "fail");
  CHECK(document["checks"]["name"]["status"] == "ok");
  // A master that did not answer: its header says why, in slot order
  // whatever the order of the facts.
  facts = cluster_facts();
  std::swap(facts[0], facts[2]);
  facts.erase(facts.begin() + 1);
  auto silent = deployment;
  silent.topology->shards[1].error = "connection refused";
  report = diagnose_all(facts, timing(), silent);
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
  document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "fail");
  CHECK(document["masters"][0]["error"].is_null());
  CHECK(document["masters"][1]["status"] == "fail");
  CHECK(document["masters"][1]["error"] == "connection refused");
  CHECK(document["masters"][1]["checks"].empty());
  // A master whose facts are missing, though the slot map's view of it has
  // no error, is still reported.
  silent.topology->shards[1].error.clear();
  report = diagnose_all(facts, timing(), silent);
  CHECK(report.servers[1].error == "no reason given");
  CHECK(doctor_exit_code(report) == 1);
  // A Cluster check alone makes it 1 too.
  deployment.topology->shards[0].replicas.clear();
  report = diagnose_all(cluster_facts(), timing(), deployment);
  CHECK(doctor_exit_code(report) == 1);
  CHECK(nlohmann::json::parse(format_doctor_json(report))["status"] == "warn");
}

namespace {

// Five independent masters that keep their locks through a restart, up an
// hour, their clocks a few ms apart; quorum 3.
std::vector<ServerFacts>
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

lock::DeploymentState
quorum_topology(const std::vector<ServerFacts>& facts, int quorum = 3) {
  lock::DeploymentState state;
  state.quorum = quorum;
  for (const auto& server : facts) {
    state.quorum_servers.push_back({server.address, {}});
  }
  return state;
}

// What QuorumStore::examine() gives for a server that did not answer.
ServerFacts
silent(const std::string& address) {
  ServerFacts facts;
  facts.address = address;
  facts.info_error = "connection refused";
  return facts;
}

// Makes facts[i] a replica of `master`.
void
make_replica(ServerFacts& facts, const std::string& host, int port) {
  facts.info["role"] = "slave";
  facts.info["master_host"] = host;
  facts.info["master_port"] = std::to_string(port);
  facts.info["connected_slaves"] = "0";
}

} // namespace

TEST_CASE("did_not_answer") {
  CHECK(did_not_answer(silent("10.0.0.1:6379")));
  CHECK_FALSE(did_not_answer(healthy()));
  // INFO, CONFIG GET and TIME refused: it still answered.
  auto refused = without_config_or_info(healthy());
  refused.clock_offset_ms.reset();
  refused.time_error = "NOPERM";
  CHECK_FALSE(did_not_answer(refused));
}

TEST_CASE("check_quorum") {
  auto facts = quorum_facts();
  auto result = check_quorum(facts, quorum_topology(facts));
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "5 servers, quorum 3, 5 answered: locks can be taken with 2 more "
           "down");
  CHECK(result.values["answered"] == 5);
  facts[1] = silent(facts[1].address);
  facts[3] = silent(facts[3].address);
  result = check_quorum(facts, quorum_topology(facts));
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "5 servers, quorum 3, 3 answered: one more down and no lock can be "
           "taken (10.0.0.2:6379, 10.0.0.4:6379 did not)");
  facts[4] = silent(facts[4].address);
  result = check_quorum(facts, quorum_topology(facts));
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

TEST_CASE("check_independent") {
  auto facts = quorum_facts();
  auto result = check_independent(facts);
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "the 5 servers that answered are masters with distinct run_ids, "
           "none a replica");
  // Two replicas of another of them.
  make_replica(facts[1], "10.0.0.1", 6379);
  make_replica(facts[2], "10.0.0.1", 6379);
  result = check_independent(facts);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.2:6379 is a replica of 10.0.0.1:6379 "
                               "(another of them); 10.0.0.3:6379 is a replica "
                               "of 10.0.0.1:6379 (another of them): "));
  // A replica of a server outside the quorum fails too.
  facts = quorum_facts();
  make_replica(facts[4], "10.9.9.9", 6379);
  result = check_independent(facts);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(
      result.message,
      Catch::StartsWith("10.0.0.5:6379 is a replica of 10.9.9.9:6379: "));
  // One server named twice.
  facts = quorum_facts();
  facts[3].info["run_id"] = facts[0].info["run_id"];
  result = check_independent(facts);
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.1:6379 and 10.0.0.4:6379 are one server "
                               "(run_id aaaa"));
  // INFO refused on one: unknown; a silent server is not judged.
  facts = quorum_facts();
  facts[2] = without_config_or_info(facts[2]);
  result = check_independent(facts);
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message,
             Catch::StartsWith("run_id or role unknown for 10.0.0.3:6379"));
  facts[2] = silent(facts[2].address);
  result = check_independent(facts);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::StartsWith("the 4 servers that answered"));
}

TEST_CASE("check_restarts") {
  auto facts = quorum_facts();
  auto result = check_restarts(facts, timing(30s), 0s);
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "every server keeps its locks through a restart (appendonly yes, "
           "appendfsync always)");
  // appendfsync everysec on two: a restart may forget; the grace decides.
  facts[0].config["appendfsync"] = "everysec";
  facts[3].config["appendonly"] = "no";
  result = check_restarts(facts, timing(30s), 0s);
  CHECK(result.status == CheckStatus::warn);
  CHECK(result.message
        == "10.0.0.1:6379, 10.0.0.4:6379 forget their locks on a restart (not "
           "appendonly yes with appendfsync always) and --restart-grace 0s is "
           "below the 30s TTL: a restarted server can grant a held lock to a "
           "second holder; set --restart-grace to the TTL or more");
  result = check_restarts(facts, timing(30s), 30s);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::Contains(", but --restart-grace 30s is at least the 30s "
                             "TTL: a restarted server grants nothing until"));
  CHECK(result.values["each"][0]["keeps_locks"] == false);
  // All of them: said so.
  for (auto& server : facts) {
    server.config["appendfsync"] = "everysec";
  }
  CHECK_THAT(check_restarts(facts, timing(30s), 0s).message,
             Catch::StartsWith("all 5 servers forget their locks on a "
                               "restart"));
  facts = quorum_facts();
  facts[0].config["appendfsync"] = "everysec";
  facts[3].config["appendonly"] = "no";
  // Up less than the TTL: it may have restarted during a hold.
  facts[3].info["uptime_in_seconds"] = "5";
  result = check_restarts(facts, timing(30s), 30s);
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::EndsWith("; 10.0.0.4:6379 up 5.0s, less than the 30s TTL: "
                             "one that restarted during a hold forgot the "
                             "locks it granted"));
  // ... unless it keeps them.
  facts = quorum_facts();
  facts[3].info["uptime_in_seconds"] = "5";
  CHECK(check_restarts(facts, timing(30s), 0s).status == CheckStatus::ok);
  // CONFIG GET refused: unknown.
  facts = quorum_facts();
  facts[1] = without_config(facts[1]);
  result = check_restarts(facts, timing(30s), 0s);
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.message == "persistence unknown for 10.0.0.2:6379");
  // INFO says the AOF is off: that is known without CONFIG GET.
  facts[1].info["aof_enabled"] = "0";
  CHECK(check_restarts(facts, timing(30s), 0s).status == CheckStatus::warn);
}

TEST_CASE("check_clocks") {
  auto facts = quorum_facts();
  auto result = check_clocks(facts, timing(30s));
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
  facts = quorum_facts();
  // 1% of a 1s TTL + 2ms is 12ms: 4ms is within it, 13ms is not.
  CHECK(check_clocks(facts, timing(1s)).status == CheckStatus::ok);
  facts[4].clock_offset_ms = 11;
  result = check_clocks(facts, timing(1s));
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("the clocks of 10.0.0.5:6379 and 10.0.0.1:6379 "
                               "differ by 13ms, more than the 12ms rlock "
                               "allows for"));
  // A clock that runs 2% fast, however the offsets look.
  facts = quorum_facts();
  facts[2].clock_rate->server = 255ms;
  result = check_clocks(facts, timing(30s));
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("10.0.0.3:6379's clock ran 2.00% fast against "
                               "this host's over 250ms: "));
  CHECK(result.values["each"][2]["rate_error_ppm"] == 20000);
  // A rate measured too roughly is not judged, and said so.
  facts[2].clock_rate->uncertainty = 5ms;
  result = check_clocks(facts, timing(30s));
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::EndsWith("; rate not measured for 10.0.0.3:6379"));
  // Fewer than two told their TIME.
  for (std::size_t i = 1; i < facts.size(); ++i) {
    facts[i].clock_offset_ms.reset();
    facts[i].time_error = "NOPERM";
  }
  facts[1] = silent(facts[1].address);
  result = check_clocks(facts, timing(1s));
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.message
        == "clocks unknown: fewer than two servers told their TIME "
           "(10.0.0.3:6379, 10.0.0.4:6379, 10.0.0.5:6379 refused it)");
}

TEST_CASE("check_name: a quorum") {
  const auto facts = quorum_facts();
  const auto result = check_name(NamedLock{"deploy", "rlock:deploy"},
                                 facts[0].address,
                                 {{}, quorum_topology(facts)});
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:deploy' on each of the 5 servers, "
           "held when 3 of them agree");
}

TEST_CASE("diagnose_all: a quorum, each server then the redlock checks") {
  auto facts = quorum_facts();
  DeploymentFacts deployment{{}, quorum_topology(facts), 0s};
  auto report =
      diagnose_all(facts, timing(), deployment, NamedLock{"a", "rlock:a"});
  CHECK(report.quorum);
  CHECK_FALSE(report.cluster);
  REQUIRE(report.servers.size() == 5);
  // No Sentinel checks on a quorum's servers.
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
  auto lines = lines_of(format_doctor_text(report));
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
  auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "ok");
  CHECK_FALSE(document.contains("masters"));
  CHECK(document["checks"].size() == 5);
  REQUIRE(document["servers"].size() == 5);
  CHECK(document["servers"][4]["server"] == "10.0.0.5:6379");
  CHECK_FALSE(document["servers"][4].contains("slots"));
  CHECK(document["servers"][4]["checks"].size() == 6);
  CHECK(document["servers"][4]["error"].is_null());
  // One server did not answer, another is a replica of a third.
  facts[1] = silent(facts[1].address);
  make_replica(facts[2], "10.0.0.1", 6379);
  report = diagnose_all(facts, timing(), deployment);
  CHECK(doctor_exit_code(report) == 1);
  lines = lines_of(format_doctor_text(report));
  CHECK(lines[8]
        == "server 10.0.0.2:6379: did not answer (connection refused)");
  CHECK(lines[9].empty());
  CHECK(lines[10] == "server 10.0.0.3:6379");
  CHECK(report.deployment[0].status == CheckStatus::ok);
  CHECK(report.deployment[1].status == CheckStatus::fail);
  document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["status"] == "fail");
  CHECK(document["servers"][1]["status"] == "fail");
  CHECK(document["servers"][1]["error"] == "connection refused");
  CHECK(document["servers"][1]["checks"].empty());
  CHECK(document["servers"][2]["checks"]["replication"]["status"] == "fail");
  CHECK(document["checks"]["independent"]["status"] == "fail");
  // A silent server alone makes the exit code 1.
  facts = quorum_facts();
  facts[4] = silent(facts[4].address);
  report = diagnose_all(facts, timing(), deployment);
  CHECK(report.deployment[0].status == CheckStatus::ok);
  CHECK(doctor_exit_code(report) == 1);
}

TEST_CASE("clock_rate_error") {
  auto facts = healthy();
  CHECK_FALSE(clock_rate_error(facts));
  facts.clock_rate = lock::ClockRate{250ms, 245ms, 100us};
  auto rate = clock_rate_error(facts);
  REQUIRE(rate);
  CHECK(rate->error == Approx(-0.02));
  CHECK(rate->bound == Approx(0.0004));
  // 2ms of round trips over 250ms: 0.8%, too rough to judge by.
  facts.clock_rate->uncertainty = 2ms;
  CHECK_FALSE(clock_rate_error(facts));
  facts.clock_rate->local = 0ms;
  CHECK_FALSE(clock_rate_error(facts));
}

TEST_CASE("diagnose: clock rate") {
  auto facts = healthy();
  facts.clock_rate = lock::ClockRate{250ms, 250ms + 500us, 100us};
  auto result = check(facts, "clock");
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.values["rate_error_ppm"] == 2000);
  CHECK(result.values["rate_bound_ppm"] == 400);
  // 1.2% fast, but only 0.04% uncertain: beyond the 1% rlock allows for.
  facts.clock_rate->server = 253ms;
  result = check(facts, "clock");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("127.0.0.1:6379's clock ran 1.20% fast against "
                               "this host's over 250ms: Redis expires leases "
                               "by its clock"));
  // 1.2% slow, within 1% once the round trips are counted.
  facts.clock_rate = lock::ClockRate{250ms, 247ms, 1ms};
  CHECK(check(facts, "clock").status == CheckStatus::ok);
}
