#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/util/duration.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::redis {
class Connection;
}

// What a server says about itself, for rlock doctor: the facts; the
// verdicts are cli/doctor_checks.cpp's.
namespace rlock::lock {

using Fields = std::map<std::string, std::string, std::less<>>;

// A WAIT for every connected replica, timed.
struct WaitProbe {
  int asked = 0;     // replicas connected
  int confirmed = 0; // replicas that acknowledged within a second
  Duration took{};
};

// Two TIME replies some 250ms apart, for the rate of the server's clock
// against this host's CLOCK_BOOTTIME.
struct ClockRate {
  Duration local{};       // between the two round trips' middles, here
  Duration server{};      // between the two TIME replies
  Duration uncertainty{}; // half the two round trips together
};

// What rlock doctor learned from the server. A value is missing when the
// command that reads it was refused; the *_error fields say why.
struct ServerFacts {
  std::string address;      // for messages: "127.0.0.1:6379"
  Fields config;            // CONFIG GET parameter -> value
  std::string config_error; // why CONFIG GET failed; empty when it worked
  Fields info;              // INFO fields of every section read
  std::string info_error;   // why an INFO section was refused
  std::string version;      // redis_version (INFO, else HELLO); "" unknown
  // Who the server says it is (INFO's server_name, else HELLO's server):
  // "redis", "valkey"; "" when it did not say.
  std::string server_name;
  // That server's own version: INFO's <server_name>_version (Valkey pins
  // redis_version at 7.2.4: valkey_version is its own), else redis_version,
  // else HELLO's version; "" unknown.
  std::string server_version;
  std::string script_error; // why EVAL of a test script failed; "" it ran
  std::vector<Duration> round_trips;           // one per PING
  std::optional<std::int64_t> server_time_ms;  // TIME, ms since the epoch
  std::optional<std::int64_t> clock_offset_ms; // server's TIME - local clock
  Duration clock_uncertainty{};                // half TIME's round trip
  std::string time_error;                      // why TIME failed
  std::optional<ClockRate> clock_rate;         // when TIME answered twice
  std::optional<WaitProbe> wait_probe;         // a master with replicas
};

// Returns the "field:value" lines of an INFO reply; "# Section" lines and
// lines without a colon are skipped.
Fields parse_info(std::string_view text);

// Who a server says it is, from the fields of INFO server.
struct ServerIdentity {
  std::string name;    // server_name ("valkey"); "redis" when INFO has none
  std::string version; // <name>_version ("8.0.1"), else redis_version
};

// Returns the identity in `info`; a name without a version of its own takes
// redis_version. Empty when `info` has neither server_name nor
// redis_version.
ServerIdentity identify_server(const Fields& info);

// Returns how messages name a server: "Valkey 8.0.1", "Redis 7.0.15",
// "Redis" (no version), "the server" (nothing known).
std::string server_label(const ServerIdentity& identity);

// Returns the replicas of an INFO replication's fields ("slave0:ip=...,
// port=...,state=online,offset=...,lag=0"), in their order.
std::vector<ReplicaState> replicas_of(const Fields& info);

// Asks the server on `connection` what doctor judges: round trips, INFO,
// CONFIG, version, role, whether scripts run, its clock, and with replicas
// how long a WAIT takes for a PUBLISH on `probe_channel` (one under the
// lock prefix, which an ACL for rlock's keys and channels allows). A refused
// command leaves its fields empty and says why; only a failed connection
// throws.
ServerFacts examine_server(redis::Connection& connection,
                           const std::string& probe_channel);

// Asks the cluster master on `connection` for its replicas (INFO
// replication), CLUSTER INFO and cluster-node-timeout; the slots are the
// caller's to fill. A refused command leaves its fields empty.
ClusterShardState describe_cluster_node(redis::Connection& connection);

} // namespace rlock::lock
