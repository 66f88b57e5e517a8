#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/lock/replicas.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/lock/timing.hpp>
#include <rlock/util/duration.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// rlock doctor's verdicts: pure functions from what the server said to one
// line per check. Gathering the facts is doctor.cpp's job.
namespace rlock::cli {

using lock::Fields;
using lock::ServerFacts;

enum class CheckStatus { ok, warn, fail, unknown };

// One check's verdict; `values` holds the raw values it was judged on.
struct CheckResult {
  std::string name;
  CheckStatus status = CheckStatus::unknown;
  std::string message;
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
};

// The oldest Redis that runs rlock's scripts: acquire.lua sets several hash
// fields in one HSET (4.0), after TIME, which needs redis.replicate_commands
// (3.2); EVALSHA, PEXPIRE and PTTL date from 2.6.
inline constexpr std::string_view k_min_redis_version = "4.0.0";

// A server clock further than this from the local one is reported.
inline constexpr std::int64_t k_max_clock_offset_ms = 1000;

// A server clock whose rate differs from the local one by more than this is
// reported: rlock allows for 1% of the TTL (lock/timing.hpp, QuorumStore).
inline constexpr double k_max_clock_rate_error = 0.01;

// A clock rate measured less precisely than this is not judged.
inline constexpr double k_clock_rate_precision = 0.005;

// How fast a server's clock ran against the local one: +0.02 for 2% fast.
struct RateError {
  double error = 0;
  double bound = 0; // how far off the measurement may be
};

// Returns the rate error of `facts`' clock, or nothing when not measured or
// measured less precisely than k_clock_rate_precision.
std::optional<RateError> clock_rate_error(const ServerFacts& facts);

// Returns the numbers of a version such as "7.0.15" or "6.2.6-rc1" ({7, 0,
// 15}), or nothing when it does not start with a number.
std::optional<std::vector<int>> parse_version(std::string_view text);

// What doctor knows of the deployment besides the server's own facts.
struct DeploymentFacts {
  lock::ReplicaPolicy replicas; // what --replicas asks of each write
  // Set for Sentinel (the sentinels' views of the master), Cluster (each
  // master, its replicas and slots) and a quorum (each server, the quorum).
  std::optional<lock::DeploymentState> topology;
  // --restart-grace: a server up less than this grants no lock.
  Duration restart_grace{};
};

// The lock `rlock doctor NAME` asks about.
struct NamedLock {
  std::string name;
  std::string key; // where the store keeps it
};

// Returns the checks of one server, in the order they are printed: version,
// eviction, persistence, replication, latency (against `timing`) and clock;
// with Sentinel, then sentinels and failover.
std::vector<CheckResult> diagnose(const ServerFacts& facts,
                                  const lock::LeaseTiming& timing,
                                  const DeploymentFacts& deployment = {});

// Returns the `cluster` check: fail when a master says cluster_state other
// than ok or did not answer, or slots are served by no master; warn when a
// master sees slots failing or the masters disagree on the nodes they know.
CheckResult check_cluster(const lock::DeploymentState& topology);

// Returns the `replicas` check: warn when a master has no replica online.
CheckResult check_cluster_replicas(const lock::DeploymentState& topology);

// Returns the Cluster's `failover` check: the largest cluster-node-timeout
// against the TTL (fail at or above it, warn within 2s), unknown when no
// master told it.
CheckResult check_cluster_failover(const lock::DeploymentState& topology,
                                   const lock::LeaseTiming& timing);

// Returns the `quorum` check of a quorum of servers (Redlock): ok when at
// least topology.quorum of `facts` answered, fail otherwise.
CheckResult check_quorum(const std::vector<ServerFacts>& facts,
                         const lock::DeploymentState& topology);

// Returns the `independent` check: fail when two servers that answered share
// a run_id (one server named twice) or one is a replica; unknown when a
// server's INFO did not tell; ok when each is a master of its own.
CheckResult check_independent(const std::vector<ServerFacts>& facts);

// Returns the `restarts` check: warn when a server forgets its locks on a
// restart (not appendonly yes with appendfsync always) and `restart_grace`
// is below the TTL, or when such a server has been up less than the TTL.
CheckResult check_restarts(const std::vector<ServerFacts>& facts,
                           const lock::LeaseTiming& timing,
                           Duration restart_grace);

// Returns the `clocks` check: warn when two servers' clocks differ by more
// than the drift a quorum allows for (1% of the TTL + 2ms); unknown when
// fewer than two told their TIME.
CheckResult check_clocks(const std::vector<ServerFacts>& facts,
                         const lock::LeaseTiming& timing);

// Returns true when `facts` are those of a server that did not answer (only
// its address and why are known).
bool did_not_answer(const ServerFacts& facts);

// Returns the `name` check: where `lock` lives. On a Cluster its slot and the
// master serving it, failing when none does, or that master did not answer or
// says cluster_state fail; with a quorum on each server; elsewhere `server`
// (ok).
CheckResult check_name(const NamedLock& lock,
                       const std::string& server,
                       const DeploymentFacts& deployment);

// The checks of one server: the only one, one master of a Cluster or one
// server of a quorum.
struct ServerChecks {
  std::string address;
  std::string slots; // a Cluster master's slots ("0-5460"); "" elsewhere
  std::vector<CheckResult> checks;
  std::string error; // a server that did not answer: why (no checks)
};

// What doctor prints: each server's checks, then the deployment's.
struct DoctorReport {
  bool cluster = false;
  bool quorum = false; // a quorum of independent servers (Redlock)
  std::vector<ServerChecks> servers;
  // Cluster: cluster, replicas, failover; a quorum: quorum, independent,
  // restarts, clocks; then name when NAME was given.
  std::vector<CheckResult> deployment;
};

// Returns every check: diagnose() of each server in `facts` (one, each
// master of a Cluster, in slot order, a master missing from `facts` saying
// why, or each server of a quorum, one that did not answer saying why), then
// the Cluster's or the quorum's checks, then `name`'s.
DoctorReport diagnose_all(const std::vector<ServerFacts>& facts,
                          const lock::LeaseTiming& timing,
                          const DeploymentFacts& deployment,
                          const std::optional<NamedLock>& name = {});

// Returns "ok", "warn", "fail" or "unknown".
std::string_view status_name(CheckStatus status);

// Returns one aligned line per check: "warn    persistence  appendonly no...".
std::string format_doctor_text(const std::vector<CheckResult>& checks);

// Returns {"server", "status", "checks": {NAME: {"status", "message",
// "values"}}} as JSON with a trailing newline; "status" is the worst check's.
std::string format_doctor_json(const std::string& address,
                               const std::vector<CheckResult>& checks);

// Returns 0 when every check is ok, else 1.
int doctor_exit_code(const std::vector<CheckResult>& checks);

// Returns the report as format_doctor_text() does; a Cluster's in sections:
// "master ADDRESS (slots ...)" before each master's checks, "cluster" before
// the Cluster's, a blank line between them; a quorum's likewise with
// "server ADDRESS" and "redlock".
std::string format_doctor_text(const DoctorReport& report);

// Returns the report as format_doctor_json() does; a Cluster's as {"status",
// "checks": {the Cluster's}, "masters": [{"server", "slots", "status",
// "checks", "error"}]}, "status" the worst check's of them all (a master
// that did not answer: "fail", and "error" says why); a quorum's likewise
// with "servers": [{"server", "status", "checks", "error"}].
std::string format_doctor_json(const DoctorReport& report);

// Returns 0 when every check of the report is ok, else 1.
int doctor_exit_code(const DoctorReport& report);

} // namespace rlock::cli
