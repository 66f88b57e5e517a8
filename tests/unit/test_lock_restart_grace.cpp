#include <rlock/lock/restart_grace.hpp>

#include <catch2/catch.hpp>

using namespace std::chrono_literals;
using namespace rlock;

TEST_CASE("uptime_of reads uptime_in_seconds from INFO server") {
  const std::string info = "# Server\r\nredis_version:7.0.15\r\n"
                           "uptime_in_seconds:42\r\nuptime_in_days:0\r\n";
  CHECK(lock::uptime_of(info) == 42);
  CHECK(lock::uptime_of("uptime_in_seconds:0") == 0);
  // Another field that ends the same way is not it.
  CHECK(lock::uptime_of("x_uptime_in_seconds:5\r\nuptime_in_seconds:7\r\n")
        == 7);
  CHECK_FALSE(lock::uptime_of("# Server\r\nredis_version:7.0.15\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:-3\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:12x\r\n"));
  CHECK_FALSE(lock::uptime_of("uptime_in_seconds:99999999999999999999\r\n"));
}

TEST_CASE("latest_start: whole seconds may count almost one too many") {
  const BootTime received = 100s;
  CHECK(lock::latest_start(10, received) == 91s);
  CHECK(lock::latest_start(1, received) == 100s);
  CHECK(lock::latest_start(0, received) == 100s);
}

TEST_CASE("held_back: until the server has been up for the grace") {
  const BootTime started = 100s;
  const auto busy = lock::held_back(
      "127.0.0.1:7000", started, {30s, "--restart-grace"}, 103s);
  REQUIRE(busy);
  CHECK(busy->retry_ms == 27'000);
  CHECK(busy->held_back
        == "the Redis server at 127.0.0.1:7000 started 3s ago; no lock is "
           "granted for another 27s (--restart-grace 30s: a holder from "
           "before a restart may still run)");
  // The time left is rounded up in words, exact in retry_ms.
  const auto soon = lock::held_back("a:1", started, {30s}, 129s + 500ms);
  REQUIRE(soon);
  CHECK(soon->retry_ms == 500);
  CHECK_THAT(soon->held_back, Catch::Contains("for another 1s"));
  CHECK_FALSE(lock::held_back("a:1", started, {30s}, 130s));
  CHECK_FALSE(lock::held_back("a:1", started, {0s}, 100s));
}

namespace {

// INFO replication as redis-server 7.0.15 wrote it, the fields the rule
// reads and those around them.
std::string
replication(const std::string& role,
            const std::string& replid2,
            long long master_offset,
            long long second_offset,
            int backlog_active,
            long long first_byte) {
  return "# Replication\r\nrole:" + role
         + "\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
           "master_replid:7abbfca27912f8c6d74cdfb3a34e639a4f30fb13\r\n"
           "master_replid2:"
         + replid2 + "\r\nmaster_repl_offset:" + std::to_string(master_offset)
         + "\r\nsecond_repl_offset:" + std::to_string(second_offset)
         + "\r\nrepl_backlog_active:" + std::to_string(backlog_active)
         + "\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:"
         + std::to_string(first_byte)
         + "\r\nrepl_backlog_histlen:" + std::to_string(master_offset) + "\r\n";
}

const std::string k_no_id(40, '0');
const std::string k_old_master = "9400743933eba54ff7b31a4b810be0b4b8ca36cb";

} // namespace

TEST_CASE("holds_synced_copy: a replica promoted after it copied its master") {
  // Restarted empty as a replica, full sync at offset 0, 50 bytes of the
  // master's stream, then REPLICAOF NO ONE.
  CHECK(lock::holds_synced_copy(
      replication("master", k_old_master, 50, 51, 1, 1)));
  // Restarted from its RDB file as a replica, partial resync from offset
  // 150 (+CONTINUE), 27 bytes more, promoted.
  CHECK(lock::holds_synced_copy(
      replication("master", k_old_master, 177, 178, 1, 151)));
  // \n alone, as a proxy may pass it on.
  auto bare = replication("master", k_old_master, 50, 51, 1, 1);
  std::erase(bare, '\r');
  CHECK(lock::holds_synced_copy(bare));
}

TEST_CASE("holds_synced_copy: never a server that may have lost locks") {
  // A master restarted empty: no second ID, no backlog; with a replica
  // attached since, a backlog but still no second ID.
  CHECK_FALSE(
      lock::holds_synced_copy(replication("master", k_no_id, 0, -1, 0, 0)));
  CHECK_FALSE(
      lock::holds_synced_copy(replication("master", k_no_id, 64, -1, 1, 1)));
  // A replica promoted before its first sync completed: a second ID (its
  // own, from its start) but no backlog, whether it started empty or from
  // its own RDB file.
  CHECK_FALSE(lock::holds_synced_copy(replication(
      "master", "3842ba36ecdec49b9b5657de521179e35e0d3e11", 0, 1, 0, 0)));
  CHECK_FALSE(lock::holds_synced_copy(
      replication("master", k_old_master, 191, 192, 0, 0)));
  // A master restarted from its RDB file (Redis 7): the file's replication
  // ID becomes the second, with a backlog, both at the file's offset + 1,
  // whatever it wrote since.
  CHECK_FALSE(lock::holds_synced_copy(replication(
      "master", "2ae93339b58cd96e1bec59509a660f2a6e6f4ee4", 50, 51, 1, 51)));
  CHECK_FALSE(lock::holds_synced_copy(replication(
      "master", "2ae93339b58cd96e1bec59509a660f2a6e6f4ee4", 100, 51, 1, 51)));
  // Promoted at once after the copy: nothing tells it from the file case.
  CHECK_FALSE(lock::holds_synced_copy(
      replication("master", k_old_master, 64, 65, 1, 65)));
  // Still a replica.
  CHECK_FALSE(
      lock::holds_synced_copy(replication("slave", k_no_id, 50, -1, 1, 1)));
}

TEST_CASE("holds_synced_copy: a field missing or malformed is a no") {
  const auto good = replication("master", k_old_master, 50, 51, 1, 1);
  REQUIRE(lock::holds_synced_copy(good));
  const auto without = [&good](const std::string& field) {
    auto text = good;
    const auto at = text.find(field + ":");
    REQUIRE(at != std::string::npos);
    text.erase(at, text.find("\r\n", at) + 2 - at);
    return text;
  };
  for (const char* field : {"role",
                            "master_replid2",
                            "second_repl_offset",
                            "repl_backlog_active",
                            "repl_backlog_first_byte_offset"}) {
    CAPTURE(field);
    CHECK_FALSE(lock::holds_synced_copy(without(field)));
  }
  CHECK_FALSE(lock::holds_synced_copy(""));
  CHECK_FALSE(lock::holds_synced_copy("ERR unknown section"));
  // An ID that is not 40 hex digits; an offset that is not a number.
  CHECK_FALSE(lock::holds_synced_copy(
      replication("master", k_old_master.substr(1), 50, 51, 1, 1)));
  CHECK_FALSE(lock::holds_synced_copy(
      replication("master", "X" + k_old_master.substr(1), 50, 51, 1, 1)));
  auto garbled = good;
  garbled.replace(garbled.find("second_repl_offset:51"),
                  std::string("second_repl_offset:51").size(),
                  "second_repl_offset:51x");
  CHECK_FALSE(lock::holds_synced_copy(garbled));
  // A backlog said to begin at 0 is not one a resync made.
  CHECK_FALSE(lock::holds_synced_copy(
      replication("master", k_old_master, 50, 51, 1, 0)));
}
