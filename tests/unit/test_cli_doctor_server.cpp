// rlock doctor's checks of one server (cli/doctor_server.cpp): each case
// changes one fact of a healthy server and reads one verdict.

#include <rlock/cli/doctor_checks.hpp>

#include <catch2/catch.hpp>

#include "doctor_facts.hpp"

using namespace doctor_facts;
using rlock::lock::identify_server;
using rlock::lock::parse_info;
using rlock::lock::server_label;
using Mode = rlock::lock::ReplicaPolicy::Mode;

TEST_CASE("parse_info reads INFO's key:value lines, skipping the rest") {
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

TEST_CASE("parse_version reads up to three numbers, the rest as 0") {
  CHECK(parse_version("7.0.15") == std::vector<int>{7, 0, 15});
  CHECK(parse_version("6.2.6-rc1") == std::vector<int>{6, 2, 6});
  CHECK(parse_version("4") == std::vector<int>{4, 0, 0});
  CHECK(parse_version("3.2") == std::vector<int>{3, 2, 0});
  CHECK_FALSE(parse_version(""));
  CHECK_FALSE(parse_version("v7"));
}

TEST_CASE("a healthy server passes every check, in order, and exits 0") {
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

// version

TEST_CASE("version: Redis 4.0 or later that runs a test script is ok") {
  auto facts = healthy();
  CHECK(check(facts, "version").message.find("Redis 7.0.15 at 127.0.0.1:6379")
        == 0);
  facts.version = "4.0.0";
  CHECK(check(facts, "version").status == CheckStatus::ok);
}

TEST_CASE("version: a Redis older than 4.0 fails as too old") {
  auto facts = healthy();
  facts.version = "3.2.12";
  const auto old = check(facts, "version");
  CHECK(old.status == CheckStatus::fail);
  CHECK_THAT(old.message, Catch::Contains("too old"));
  CHECK_THAT(old.message, Catch::Contains("4.0 or later"));
  CHECK(old.values["redis_version"] == "3.2.12");
  CHECK(old.values["minimum"] == "4.0.0");
}

TEST_CASE("version: a server that refuses a test script fails") {
  auto facts = healthy();
  facts.script_error = "NOPERM no 'eval'";
  const auto refused = check(facts, "version");
  CHECK(refused.status == CheckStatus::fail);
  CHECK_THAT(refused.message, Catch::Contains("EVAL: NOPERM no 'eval'"));
  CHECK(refused.values["scripts_run"] == false);
}

TEST_CASE("version: no version told is unknown") {
  auto facts = healthy();
  facts.version.clear();
  const auto unknown = check(facts, "version");
  CHECK(unknown.status == CheckStatus::unknown);
  CHECK(unknown.values["redis_version"].is_null());
}

// eviction

TEST_CASE("eviction: noeviction is ok") {
  CHECK_THAT(check(healthy(), "eviction").message,
             Catch::StartsWith("maxmemory-policy noeviction: "));
}

TEST_CASE("eviction: a volatile policy with maxmemory set warns that every "
          "lock key has an expiry") {
  auto facts = healthy();
  facts.config["maxmemory"] = "104857600";
  facts.config["maxmemory-policy"] = "volatile-lru";
  const auto result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("maxmemory-policy volatile-lru with maxmemory "
                               "100mb: "));
  CHECK_THAT(result.message, Catch::Contains("every lock key has one"));
  CHECK(result.values["maxmemory"] == 104857600);
  CHECK(result.values["source"] == "CONFIG GET");
}

TEST_CASE("eviction: an allkeys policy with maxmemory set warns that any key "
          "may go") {
  auto facts = healthy();
  facts.config["maxmemory"] = "104857600";
  facts.config["maxmemory-policy"] = "allkeys-lfu";
  const auto result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("any key"));
  facts.config["maxmemory"] = "1000";
  CHECK_THAT(check(facts, "eviction").message,
             Catch::Contains("maxmemory 1000 bytes"));
}

TEST_CASE("eviction: an evicting policy without maxmemory is ok, said "
          "plainly") {
  auto facts = healthy();
  facts.config["maxmemory-policy"] = "allkeys-lfu";
  facts.config["maxmemory"] = "0";
  const auto result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::Contains("maxmemory is 0"));
  CHECK_THAT(result.message, Catch::Contains("prefer noeviction"));
}

TEST_CASE("eviction: CONFIG GET refused, INFO's policy is judged and named") {
  auto facts = without_config(healthy());
  facts.info["maxmemory_policy"] = "volatile-ttl";
  facts.info["maxmemory"] = "1073741824";
  const auto result = check(facts, "eviction");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::Contains("volatile-ttl with maxmemory 1gb"));
  CHECK_THAT(result.message, Catch::Contains("(from INFO"));
  CHECK(result.values["source"] == "INFO");
}

TEST_CASE("eviction: CONFIG GET and INFO refused is unknown, saying both") {
  const auto result = check(without_config_or_info(healthy()), "eviction");
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("CONFIG GET refused (NOPERM"));
  CHECK_THAT(result.message,
             Catch::Contains("INFO refused (NOPERM no 'info')"));
  CHECK(result.values["maxmemory_policy"].is_null());
  CHECK(result.values["source"].is_null());
}

// persistence

TEST_CASE("persistence: appendonly yes is ok unless appendfsync is no") {
  auto facts = healthy();
  CHECK_THAT(check(facts, "persistence").message,
             Catch::StartsWith("appendonly yes, appendfsync everysec: "));
  facts.config["appendfsync"] = "always";
  CHECK(check(facts, "persistence").status == CheckStatus::ok);
  facts.config["appendfsync"] = "no";
  CHECK(check(facts, "persistence").status == CheckStatus::warn);
}

TEST_CASE("persistence: no AOF and no snapshots warns that a restart empties "
          "Redis") {
  auto facts = healthy();
  facts.config["appendonly"] = "no";
  const auto result = check(facts, "persistence");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::StartsWith("appendonly no, save \"\": "));
  CHECK_THAT(result.message, Catch::Contains("a restart empties Redis"));
  CHECK(result.values["save"] == "");
}

TEST_CASE("persistence: RDB snapshots only warns, with the last save") {
  auto facts = healthy();
  facts.config["appendonly"] = "no";
  facts.config["save"] = "3600 1";
  const auto result = check(facts, "persistence");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("RDB snapshots only"));
  CHECK_THAT(result.message,
             Catch::Contains("(last save 12.0s ago, 3 changes since)"));
  CHECK(result.values["rdb_changes_since_last_save"] == 3);
}

TEST_CASE("persistence: CONFIG GET refused, INFO's aof_enabled 1 is ok, "
          "appendfsync unknown") {
  const auto result = check(without_config(healthy()), "persistence");
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::Contains("appendfsync unknown"));
  CHECK(result.values["appendonly"] == "yes");
  CHECK(result.values["appendfsync"].is_null());
  CHECK(result.values["source"] == "INFO");
}

TEST_CASE("persistence: CONFIG GET refused, INFO's aof_enabled 0 warns, save "
          "unknown") {
  auto facts = without_config(healthy());
  facts.info["aof_enabled"] = "0";
  const auto result = check(facts, "persistence");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("save unknown"));
}

TEST_CASE("persistence: CONFIG GET and INFO refused is unknown") {
  const auto result = check(without_config_or_info(healthy()), "persistence");
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.values["appendonly"].is_null());
}

// replication

TEST_CASE("replication: a master without replicas is ok") {
  auto facts = healthy();
  facts.info["connected_slaves"] = "0";
  CHECK(check(facts, "replication", timing(), {{Mode::automatic, 0}, {}}).status
        == CheckStatus::ok);
}

TEST_CASE("replication: replicas that confirm no write (--replicas 0) warn "
          "that a failover can lose a lock") {
  auto facts = healthy();
  facts.info["connected_slaves"] = "2";
  const auto result = check(facts, "replication");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::StartsWith("master with 2 replicas: "));
  CHECK_THAT(result.message, Catch::Contains("WAIT"));
  CHECK(result.values["connected_replicas"] == 2);
}

TEST_CASE("replication: --replicas that the replicas can confirm is ok, with "
          "the WAIT probe and min-replicas-to-write") {
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
}

TEST_CASE("replication: a WAIT probe short of --replicas fails: acquires fail "
          "now") {
  auto facts = healthy();
  facts.info["connected_slaves"] = "2";
  facts.wait_probe = lock::WaitProbe{2, 0, 1s};
  const auto result =
      check(facts, "replication", timing(), {{Mode::automatic, 0}, {}});
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("acquires fail now"));
}

TEST_CASE("replication: --replicas above the replicas there are fails") {
  auto facts = healthy();
  facts.info["connected_slaves"] = "2";
  const auto result =
      check(facts, "replication", timing(), {{Mode::count, 3}, {}});
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("every acquire would fail"));
}

TEST_CASE("replication: a replica fails (READONLY), naming its master") {
  auto facts = healthy();
  facts.info = {{"role", "slave"},
                {"master_host", "10.0.0.1"},
                {"master_port", "6380"},
                {"master_link_status", "up"}};
  const auto result = check(facts, "replication");
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message,
             Catch::StartsWith("replica of 10.0.0.1:6380 (link up): "));
  CHECK_THAT(result.message, Catch::Contains("READONLY"));
  CHECK(result.values["master_port"] == 6380);
}

TEST_CASE("replication: a role that holds no locks fails; no role is "
          "unknown") {
  auto facts = healthy();
  facts.info = {{"role", "sentinel"}};
  CHECK(check(facts, "replication").status == CheckStatus::fail);
  const auto result = check(without_config_or_info(healthy()), "replication");
  CHECK(result.status == CheckStatus::unknown);
  CHECK(result.values["role"].is_null());
}

// latency

TEST_CASE("latency: round trips within the TTL's margin are ok") {
  auto facts = healthy();
  auto result = check(facts, "latency");
  CHECK_THAT(result.message,
             Catch::StartsWith("round trip median 0.20ms, max 0.30ms over 5 "
                               "PINGs: within the 305ms margin of a 30s TTL"));
  CHECK(result.values["rtt_median_ms"] == 0.2);
  CHECK(result.values["rtt_max_ms"] == 0.3);
  CHECK(result.values["ttl_ms"] == 30000);
  CHECK(result.values["margin_ms"] == 305);
  // The margin itself is still ok.
  facts.round_trips = {1ms, 305ms};
  result = check(facts, "latency");
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.values["rtt_median_ms"] == 153);
}

TEST_CASE("latency: a round trip past the margin warns") {
  auto facts = healthy();
  facts.round_trips = {1ms, 305001us};
  const auto result = check(facts, "latency");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message, Catch::Contains("more than the 305ms margin"));
  CHECK_THAT(result.message, Catch::Contains("--ttl"));
}

TEST_CASE("latency: a shorter --ttl has a smaller margin (1s: 15ms)") {
  auto facts = healthy();
  facts.round_trips = {20ms};
  CHECK(check(facts, "latency", timing(1s)).status == CheckStatus::warn);
  CHECK(check(facts, "latency", timing(5s)).status == CheckStatus::ok);
}

TEST_CASE("latency: a round trip of TTL/3 leaves no time to renew: fail") {
  auto facts = healthy();
  facts.round_trips = {10s};
  const auto result = check(facts, "latency");
  CHECK(result.status == CheckStatus::fail);
  CHECK_THAT(result.message, Catch::Contains("TTL/3"));
}

TEST_CASE("latency: no PING answered is unknown") {
  auto facts = healthy();
  facts.round_trips.clear();
  CHECK(check(facts, "latency").status == CheckStatus::unknown);
}

// clock

TEST_CASE("clock: an offset up to 1s is ok, and says leases go by the "
          "server's wall clock") {
  auto facts = healthy();
  facts.clock_offset_ms = 1000;
  CHECK(check(facts, "clock").status == CheckStatus::ok);
  // Leases do depend on the server's wall clock: no claim otherwise.
  CHECK_THAT(check(facts, "clock").message,
             Catch::Contains("Redis expires leases by its wall clock"));
}

TEST_CASE("clock: an offset over 1s, ahead or behind, warns") {
  auto facts = healthy();
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
}

TEST_CASE("clock: TIME refused is unknown, saying why") {
  auto facts = healthy();
  facts.clock_offset_ms.reset();
  facts.time_error = "NOPERM no 'time'";
  const auto result = check(facts, "clock");
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message, Catch::Contains("NOPERM no 'time'"));
  CHECK(result.values["offset_ms"].is_null());
}

TEST_CASE("clock_rate_error: the rate off and its bound, nothing when not "
          "measured or too rough") {
  auto facts = healthy();
  CHECK_FALSE(clock_rate_error(facts));
  facts.clock_rate = lock::ClockRate{250ms, 245ms, 100us};
  const auto rate = clock_rate_error(facts);
  REQUIRE(rate);
  CHECK(rate->error == Approx(-0.02));
  CHECK(rate->bound == Approx(0.0004));
  // 2ms of round trips over 250ms: 0.8%, too rough to judge by.
  facts.clock_rate->uncertainty = 2ms;
  CHECK_FALSE(clock_rate_error(facts));
  facts.clock_rate->local = 0ms;
  CHECK_FALSE(clock_rate_error(facts));
}

TEST_CASE("clock: a rate within 1% is ok, in ppm") {
  auto facts = healthy();
  facts.clock_rate = lock::ClockRate{250ms, 250ms + 500us, 100us};
  const auto result = check(facts, "clock");
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.values["rate_error_ppm"] == 2000);
  CHECK(result.values["rate_bound_ppm"] == 400);
  // 1.2% slow, within 1% once the round trips are counted.
  facts.clock_rate = lock::ClockRate{250ms, 247ms, 1ms};
  CHECK(check(facts, "clock").status == CheckStatus::ok);
}

TEST_CASE("clock: a rate off by more than 1% however measured warns") {
  auto facts = healthy();
  // 1.2% fast, but only 0.04% uncertain: beyond the 1% rlock allows for.
  facts.clock_rate = lock::ClockRate{250ms, 253ms, 100us};
  const auto result = check(facts, "clock");
  CHECK(result.status == CheckStatus::warn);
  CHECK_THAT(result.message,
             Catch::StartsWith("127.0.0.1:6379's clock ran 1.20% fast against "
                               "this host's over 250ms: Redis expires leases "
                               "by its clock"));
}

// server naming (INFO server_name / <name>_version, HELLO)

TEST_CASE("identify_server: Valkey by server_name and valkey_version, not "
          "the redis_version it pins; Redis by redis_version") {
  const auto valkey = identify_server(
      parse_info("# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\n"
                 "valkey_version:8.0.1\r\nuptime_in_seconds:4\r\n"));
  CHECK(valkey.name == "valkey");
  CHECK(valkey.version == "8.0.1");
  CHECK(server_label(valkey) == "Valkey 8.0.1");
  const auto redis =
      identify_server(parse_info("redis_version:7.0.15\r\nredis_mode:x\r\n"));
  CHECK(redis.name == "redis");
  CHECK(redis.version == "7.0.15");
  CHECK(server_label(redis) == "Redis 7.0.15");
  // A name without a version of its own: the Redis one.
  const auto other =
      identify_server(parse_info("redis_version:7.2.4\nserver_name:kv\n"));
  CHECK(server_label(other) == "Kv 7.2.4");
  CHECK(server_label(identify_server({})) == "the server");
}

TEST_CASE("version: Valkey is named with its own version and judged by the "
          "Redis version it reports") {
  auto facts = doctor_facts::healthy();
  facts.info["redis_version"] = "7.2.4";
  facts.info["server_name"] = "valkey";
  facts.info["valkey_version"] = "8.0.1";
  facts.version = "7.2.4";
  facts.server_name = "valkey";
  facts.server_version = "8.0.1";
  const auto result = check(facts, "version");
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message,
             Catch::StartsWith("Valkey 8.0.1 at 127.0.0.1:6379 ran a test"));
  CHECK(result.values["redis_version"] == "7.2.4");
  CHECK(result.values["server_name"] == "valkey");
  CHECK(result.values["server_version"] == "8.0.1");
  // Only HELLO answered (INFO refused): Valkey's own version, judged as the
  // Redis 7.2.4 every Valkey reports.
  facts.version.clear();
  CHECK(check(facts, "version").status == CheckStatus::ok);
  // Plain Redis as before.
  auto redis = doctor_facts::healthy();
  CHECK_THAT(check(redis, "version").message,
             Catch::StartsWith("Redis 7.0.15 at 127.0.0.1:6379 ran a test"));
}

// holdback (--restart-grace)

namespace {

CheckResult
holdback(const ServerFacts& facts, Duration grace = 30s) {
  return check(facts, "holdback", doctor_facts::timing(), {{}, {}, grace});
}

} // namespace

TEST_CASE("holdback: a server up less than the grace warns how long locks "
          "are held back; longer is ok; no grace, no check") {
  auto facts = doctor_facts::healthy();
  facts.info["uptime_in_seconds"] = "5";
  const auto young = holdback(facts);
  CHECK(young.status == CheckStatus::warn);
  CHECK_THAT(young.message,
             Catch::Contains("127.0.0.1:6379 started 5s ago: locks are held "
                             "back for 26s more (--restart-grace 30s)"));
  CHECK(young.values["held_back_ms"] == 26000);
  facts.info["uptime_in_seconds"] = "31";
  const auto old = holdback(facts);
  CHECK(old.status == CheckStatus::ok);
  CHECK(old.values["held_back_ms"].is_null());
  for (const auto& result :
       diagnose(facts, doctor_facts::timing(), DeploymentFacts{})) {
    CHECK(result.name != "holdback");
  }
}

TEST_CASE("holdback: INFO refused is unknown, naming the exit and the way "
          "out") {
  auto facts = doctor_facts::healthy();
  facts.info.clear();
  facts.info_error = "NOPERM this user has no permissions to run 'info'";
  const auto result = holdback(facts);
  CHECK(result.status == CheckStatus::unknown);
  CHECK_THAT(result.message,
             Catch::Contains("INFO refused (NOPERM")
                 && Catch::Contains("exit 69")
                 && Catch::Contains("set --restart-grace 0"));
}

TEST_CASE("holdback: a young master that holds a copy synced from its former "
          "master is not held back") {
  auto facts = doctor_facts::healthy();
  facts.info["uptime_in_seconds"] = "5";
  facts.info["master_replid2"] = std::string(40, 'a');
  facts.info["repl_backlog_active"] = "1";
  facts.info["second_repl_offset"] = "200";
  facts.info["repl_backlog_first_byte_offset"] = "100";
  const auto result = holdback(facts);
  CHECK(result.status == CheckStatus::ok);
  CHECK_THAT(result.message, Catch::Contains("holds a copy synced"));
}
