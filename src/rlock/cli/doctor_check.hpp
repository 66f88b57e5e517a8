#pragma once

#include <rlock/lock/server_facts.hpp>
#include <rlock/lock/timing.hpp>
#include <rlock/util/duration.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The bottom of rlock doctor's checks: what a verdict is, the thresholds,
// and the wording the single-server, Sentinel, Cluster and quorum checks
// (doctor_server, doctor_sentinel, doctor_cluster, doctor_quorum) and the
// report (doctor_report) share. It includes none of them.
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

// The Redis version Valkey forked from, which every Valkey reports as
// redis_version (its own is valkey_version).
inline constexpr std::string_view k_valkey_redis_version = "7.2.4";

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

namespace doctor {

using Json = nlohmann::ordered_json;

// Returns a check named `name`, its status unknown.
CheckResult named(std::string name);

// Returns the value of `key` in `fields`, or nullptr.
const std::string* find(const Fields& fields, std::string_view key);

// Returns the whole decimal integer in `text`, or nothing (no text, not a
// number).
std::optional<long long> to_integer(const std::string* text);

// Returns `text` as a JSON string, or null.
Json json_or_null(const std::string* text);

// Returns `value` as a JSON number, or null.
Json json_or_null(std::optional<long long> value);

// Returns `error` as a JSON string, or null when empty.
Json error_json(const std::string& error);

// Milliseconds for JSON: an integer when whole, else to the microsecond.
Json ms_json(Duration duration);

// Returns "0.12ms", "6.0ms", "305ms", "1.205s": enough digits for a round
// trip.
std::string format_ms(Duration duration);

// Returns `parts` joined by `separator`.
std::string joined(const std::vector<std::string>& parts,
                   const std::string& separator);

// Returns "1 server", "3 servers".
std::string servers_count(std::size_t count);

// Returns "2.00%" for 0.02.
std::string percent(double fraction);

// Returns `fraction` in parts per million, rounded half away from zero.
Json ppm_json(double fraction);

// Returns whether `rate` is off by more than k_max_clock_rate_error, however
// wrong the measurement.
bool rate_off(const RateError& rate);

// Returns "127.0.0.1:6379's clock ran 2.00% fast against this host's over
// 250ms".
std::string rate_text(const ServerFacts& facts, const RateError& rate);

// Judges a failover that takes `detect` (Sentinel's down-after-milliseconds,
// Cluster's cluster-node-timeout: `setting`) plus an election against the
// TTL: fail at or above it, warn within 2s, ok below.
void judge_failover(CheckResult& check,
                    const std::string& setting,
                    Duration detect,
                    const lock::LeaseTiming& timing);

} // namespace doctor

} // namespace rlock::cli
