#include <rlock/cli/doctor_checks.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/redis/cluster.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rlock::cli {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t k_status_width = 8; // "unknown" and a space
constexpr std::size_t k_name_width = 13;  // "persistence" and two spaces

CheckResult
named(std::string name) {
  CheckResult check;
  check.name = std::move(name);
  return check;
}

// Returns the value of `key` in `fields`, or nullptr.
const std::string*
find(const Fields& fields, std::string_view key) {
  const auto found = fields.find(key);
  return found == fields.end() ? nullptr : &found->second;
}

std::optional<long long>
to_integer(const std::string* text) {
  long long value = 0;
  if (text == nullptr || text->empty()) {
    return std::nullopt;
  }
  const auto* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) {
    return std::nullopt;
  }
  return value;
}

Json
json_or_null(const std::string* text) {
  return text == nullptr ? Json(nullptr) : Json(*text);
}

Json
json_or_null(std::optional<long long> value) {
  return value ? Json(*value) : Json(nullptr);
}

double
to_ms(Duration duration) {
  return static_cast<double>(duration.count()) / 1e6;
}

// Milliseconds for JSON: an integer when whole, else to the microsecond.
Json
ms_json(Duration duration) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
  if (micros % 1000 == 0) {
    return micros / 1000;
  }
  return static_cast<double>(micros) / 1000;
}

// "0.12ms", "6.0ms", "305ms", "1.205s": enough digits for a round trip.
std::string
format_ms(Duration duration) {
  const double ms = to_ms(duration);
  if (ms >= 1000) {
    return format_seconds(duration);
  }
  char text[32];
  std::snprintf(text,
                sizeof(text),
                ms < 1    ? "%.2fms"
                : ms < 10 ? "%.1fms"
                          : "%.0fms",
                ms);
  return text;
}

// Redis's own units: "100mb" for 100 * 1024 * 1024 bytes.
std::string
format_bytes(long long bytes) {
  constexpr long long k_kb = 1024;
  for (const auto& [unit, size] : {std::pair{"gb", k_kb * k_kb * k_kb},
                                   std::pair{"mb", k_kb * k_kb},
                                   std::pair{"kb", k_kb}}) {
    if (bytes % size == 0) {
      return std::to_string(bytes / size) + unit;
    }
  }
  return std::to_string(bytes) + " bytes";
}

// Why nothing could be read: "CONFIG GET refused (NOPERM ...), INFO refused
// (...)"; CONFIG GET only when `with_config`.
std::string
why_unknown(const ServerFacts& facts, bool with_config = true) {
  std::string reasons;
  if (with_config && !facts.config_error.empty()) {
    reasons = "CONFIG GET refused (" + facts.config_error + ")";
  }
  if (!facts.info_error.empty()) {
    reasons += (reasons.empty() ? "" : ", ") + std::string("INFO refused (")
               + facts.info_error + ")";
  }
  return reasons.empty() ? "the server did not say" : reasons;
}

constexpr std::string_view k_from_info = " (from INFO: CONFIG GET refused)";

CheckResult
check_version(const ServerFacts& facts) {
  auto check = named("version");
  const auto version = parse_version(facts.version);
  const auto minimum = parse_version(k_min_redis_version).value();
  check.values = {
      {"redis_version",
       facts.version.empty() ? Json(nullptr) : Json(facts.version)},
      {"minimum", k_min_redis_version},
      {"scripts_run", facts.script_error.empty()},
      {"script_error",
       facts.script_error.empty() ? Json(nullptr) : Json(facts.script_error)}};
  const std::string needs =
      "rlock needs Redis 4.0 or later (Lua scripts with EVALSHA, PEXPIRE, "
      "HSET of several fields)";
  const std::string redis = "Redis " + facts.version + " at " + facts.address;
  if (version && *version < minimum) {
    check.status = CheckStatus::fail;
    check.message = redis + " is too old: " + needs;
  } else if (!facts.script_error.empty()) {
    check.status = CheckStatus::fail;
    check.message = (version ? redis : "The server at " + facts.address)
                    + " refuses a test script (EVAL: " + facts.script_error
                    + "): every lock step is a Lua script";
  } else if (!version) {
    check.status = CheckStatus::unknown;
    check.message = "version of " + facts.address + " unknown ("
                    + why_unknown(facts, false) + ", and HELLO did not say); "
                    + "a test script ran; " + needs;
  } else {
    check.status = CheckStatus::ok;
    check.message = redis + " ran a test script; " + needs;
  }
  return check;
}

std::string
eviction_warning(const std::string& policy, long long maxmemory) {
  const std::string head = "maxmemory-policy " + policy + " with maxmemory "
                           + format_bytes(maxmemory)
                           + ": when memory runs out Redis may evict ";
  const std::string tail = ", and a second holder can then take an evicted "
                           "lock; set maxmemory-policy noeviction";
  if (policy.starts_with("volatile-")) {
    return head + "keys with an expiry, and every lock key has one" + tail;
  }
  return head + "any key, a held lock included" + tail;
}

CheckResult
check_eviction(const ServerFacts& facts) {
  auto check = named("eviction");
  const auto* policy = find(facts.config, "maxmemory-policy");
  const auto* maxmemory_text = find(facts.config, "maxmemory");
  const bool from_config = policy != nullptr;
  if (!from_config) {
    policy = find(facts.info, "maxmemory_policy");
    maxmemory_text = find(facts.info, "maxmemory");
  }
  const auto maxmemory = to_integer(maxmemory_text);
  check.values = {{"maxmemory_policy", json_or_null(policy)},
                  {"maxmemory", json_or_null(maxmemory)},
                  {"source",
                   policy == nullptr ? Json(nullptr)
                   : from_config     ? Json("CONFIG GET")
                                     : Json("INFO")}};
  if (policy == nullptr) {
    check.message = "maxmemory-policy unknown: " + why_unknown(facts)
                    + "; only noeviction keeps Redis from evicting lock keys";
    return check;
  }
  const std::string note = from_config ? "" : std::string(k_from_info);
  if (*policy == "noeviction") {
    check.status = CheckStatus::ok;
    check.message = "maxmemory-policy noeviction" + note
                    + ": lock keys are never evicted; a full Redis refuses "
                      "new locks instead";
  } else if (maxmemory == 0) {
    check.status = CheckStatus::ok;
    check.message = "maxmemory-policy " + *policy + note
                    + ", but maxmemory is 0 (no limit), so nothing is "
                      "evicted; were maxmemory set, this policy could evict "
                      "lock keys: prefer noeviction";
  } else if (!maxmemory) {
    check.status = CheckStatus::warn;
    check.message = "maxmemory-policy " + *policy + note
                    + " (maxmemory unknown): once memory runs out Redis may "
                      "evict lock keys; set maxmemory-policy noeviction";
  } else {
    check.status = CheckStatus::warn;
    check.message = eviction_warning(*policy, *maxmemory) + note;
  }
  return check;
}

// "12s ago, 3 changes since", from INFO persistence, or "".
std::string
last_save(const ServerFacts& facts) {
  const auto saved = to_integer(find(facts.info, "rdb_last_save_time"));
  const auto changes =
      to_integer(find(facts.info, "rdb_changes_since_last_save"));
  std::string text;
  if (saved && facts.server_time_ms) {
    const auto age_s =
        std::max<long long>(*facts.server_time_ms / 1000 - *saved, 0);
    text = "last save " + format_duration(std::chrono::seconds(age_s)) + " ago";
  }
  if (changes) {
    text += (text.empty() ? "" : ", ") + std::to_string(*changes)
            + " changes since";
  }
  return text;
}

CheckResult
check_aof(const ServerFacts& facts, const std::string& appendonly) {
  auto check = named("persistence");
  const auto* fsync = find(facts.config, "appendfsync");
  const std::string survive = "held locks survive a restart of Redis";
  const std::string expired =
      "; a lock whose lease ran out while Redis was down is gone "
      "when it is back";
  check.status = CheckStatus::ok;
  if (fsync == nullptr) {
    check.message = appendonly + ", appendfsync unknown: " + survive
                    + "; how much a crash of the machine loses depends on "
                      "appendfsync"
                    + expired;
  } else if (*fsync == "always") {
    check.message = appendonly + ", appendfsync always: " + survive
                    + ", even a crash of the machine" + expired;
  } else if (*fsync == "no") {
    check.status = CheckStatus::warn;
    check.message = appendonly + ", appendfsync no: " + survive
                    + ", but a crash of the machine loses what the OS had not "
                      "written yet (often 30s): locks taken then vanish; use "
                      "appendfsync everysec";
  } else {
    check.message = appendonly + ", appendfsync " + *fsync + ": " + survive
                    + " (a crash of the machine can lose the last second)"
                    + expired;
  }
  return check;
}

CheckResult
check_persistence(const ServerFacts& facts) {
  const auto* appendonly = find(facts.config, "appendonly");
  const auto* aof_enabled = find(facts.info, "aof_enabled");
  std::optional<bool> aof;
  std::string said;
  if (appendonly != nullptr) {
    aof = *appendonly == "yes";
    said = "appendonly " + *appendonly;
  } else if (aof_enabled != nullptr) {
    aof = *aof_enabled != "0";
    said = std::string("appendonly ") + (*aof ? "yes" : "no")
           + std::string(k_from_info);
  }
  const auto* save = find(facts.config, "save");
  auto check = named("persistence");
  if (aof == true) {
    check = check_aof(facts, said);
  } else if (!aof) {
    check.message = "persistence unknown: " + why_unknown(facts)
                    + "; without appendonly yes a restart loses locks";
  } else if (save != nullptr && save->empty()) {
    check.status = CheckStatus::warn;
    check.message = said
                    + ", save \"\": no persistence: a restart empties Redis, "
                      "every held lock vanishes, so a second holder can start "
                      "while the first still runs; use appendonly yes";
  } else if (save != nullptr) {
    const auto when = last_save(facts);
    check.status = CheckStatus::warn;
    check.message = said + ", save \"" + *save
                    + "\": RDB snapshots only: a restart goes back to the "
                      "last snapshot"
                    + (when.empty() ? "" : " (" + when + ")")
                    + ": locks taken since vanish, renewed ones return with "
                      "their old expiry (dropped if past); use appendonly yes";
  } else {
    const auto when = last_save(facts);
    check.status = CheckStatus::warn;
    check.message = said
                    + ", save unknown: a restart loses every lock taken since "
                      "the last snapshot"
                    + (when.empty() ? "" : " (" + when + ")")
                    + ", or all of them without snapshots; use appendonly yes";
  }
  check.values = {
      {"appendonly", aof ? Json(*aof ? "yes" : "no") : Json(nullptr)},
      {"appendfsync", json_or_null(find(facts.config, "appendfsync"))},
      {"save", json_or_null(save)},
      {"rdb_last_save_time",
       json_or_null(to_integer(find(facts.info, "rdb_last_save_time")))},
      {"rdb_changes_since_last_save",
       json_or_null(
           to_integer(find(facts.info, "rdb_changes_since_last_save")))},
      {"source",
       appendonly != nullptr ? Json("CONFIG GET")
       : aof                 ? Json("INFO")
                             : Json(nullptr)}};
  return check;
}

// Says what --replicas makes of a master with `connected` replicas.
void
judge_confirmation(CheckResult& check,
                   const ServerFacts& facts,
                   long long connected,
                   const lock::ReplicaPolicy& policy) {
  const int required =
      lock::required_replicas(policy, static_cast<int>(connected));
  check.values["required_confirmations"] = required;
  std::string probe;
  if (facts.wait_probe) {
    const auto& wait = *facts.wait_probe;
    check.values["wait_probe"] = {{"asked", wait.asked},
                                  {"confirmed", wait.confirmed},
                                  {"took_ms", ms_json(wait.took)}};
    probe = "; WAIT " + std::to_string(wait.asked) + ": "
            + std::to_string(wait.confirmed) + " confirmed in "
            + format_ms(wait.took);
  }
  const auto* min_replicas = find(facts.config, "min-replicas-to-write");
  check.values["min_replicas_to_write"] =
      json_or_null(to_integer(min_replicas));
  if (const auto minimum = to_integer(min_replicas); minimum && *minimum > 0) {
    probe += "; min-replicas-to-write " + std::to_string(*minimum)
             + ": the master refuses writes with fewer replicas";
  }
  const std::string head = "master with " + std::to_string(connected)
                           + (connected == 1 ? " replica" : " replicas");
  const bool probe_short =
      facts.wait_probe && facts.wait_probe->confirmed < required;
  if (required > connected) {
    check.status = CheckStatus::fail;
    check.message = head + ", but --replicas asks " + std::to_string(required)
                    + " to confirm each write: every acquire would fail"
                    + probe;
  } else if (probe_short) {
    check.status = CheckStatus::fail;
    check.message = head + ", but only "
                    + std::to_string(facts.wait_probe->confirmed)
                    + " confirmed a write within a second, fewer than the "
                    + std::to_string(required)
                    + " --replicas asks for: acquires fail now" + probe;
  } else if (required > 0) {
    check.status = CheckStatus::ok;
    check.message =
        head + ": each acquire and renewal waits until "
        + std::to_string(required) + " of them "
        + (required == 1 ? "has" : "have")
        + " it (WAIT), so a failover promotes a replica that holds the "
          "lock, unless more replicas fail at once"
        + probe;
  } else {
    check.status = CheckStatus::warn;
    check.message =
        head
        + ": replication is asynchronous and no replica confirms the "
          "locks (--replicas 0: no WAIT), so a failover can promote a replica "
          "that "
          "lacks a lock taken just before it, and a second holder can take "
          "it; use --replicas 1 and pass RLOCK_FENCE to what the lock "
          "protects"
        + probe;
  }
}

CheckResult
check_replication(const ServerFacts& facts, const lock::ReplicaPolicy& policy) {
  auto check = named("replication");
  const auto* role = find(facts.info, "role");
  const auto replicas = to_integer(find(facts.info, "connected_slaves"));
  const auto* master_host = find(facts.info, "master_host");
  const auto* master_port = find(facts.info, "master_port");
  const auto* link = find(facts.info, "master_link_status");
  check.values = {{"role", json_or_null(role)},
                  {"connected_replicas", json_or_null(replicas)},
                  {"master_host", json_or_null(master_host)},
                  {"master_port", json_or_null(to_integer(master_port))},
                  {"master_link_status", json_or_null(link)}};
  if (role == nullptr || (*role == "master" && !replicas)) {
    check.message = "role unknown: " + why_unknown(facts, false);
  } else if (*role == "master" && *replicas == 0) {
    check.status = CheckStatus::ok;
    check.message = "master with no replicas: no failover can hand a held "
                    "lock to a second holder (a restart can: see persistence)";
  } else if (*role == "master") {
    judge_confirmation(check, facts, *replicas, policy);
  } else if (*role == "slave" || *role == "replica") {
    check.status = CheckStatus::fail;
    check.message =
        "replica"
        + (master_host != nullptr
               ? " of " + *master_host
                     + (master_port != nullptr ? ":" + *master_port : "")
               : std::string())
        + (link != nullptr ? " (link " + *link + ")" : "")
        + ": a replica refuses lock writes (READONLY); point --url at the "
          "master";
  } else {
    check.status = CheckStatus::fail;
    check.message = "role " + quote(*role)
                    + ": not a server that holds locks; point --url at the "
                      "master";
  }
  return check;
}

Duration
median(std::vector<Duration> values) {
  std::sort(values.begin(), values.end());
  const auto middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle]
                                : (values[middle - 1] + values[middle]) / 2;
}

CheckResult
check_latency(const ServerFacts& facts, const lock::LeaseTiming& timing) {
  auto check = named("latency");
  const auto& trips = facts.round_trips;
  check.values = {{"pings", trips.size()},
                  {"rtt_median_ms", nullptr},
                  {"rtt_max_ms", nullptr},
                  {"ttl_ms", ms_json(timing.ttl)},
                  {"margin_ms", ms_json(timing.margin)}};
  if (trips.empty()) {
    check.message = "round trip unknown: no PING was answered";
    return check;
  }
  const auto max = *std::max_element(trips.begin(), trips.end());
  const auto mid = median(trips);
  check.values["rtt_median_ms"] = ms_json(mid);
  check.values["rtt_max_ms"] = ms_json(max);
  const std::string measured = "round trip median " + format_ms(mid) + ", max "
                               + format_ms(max) + " over "
                               + std::to_string(trips.size()) + " PINGs";
  const std::string margin = "the " + format_ms(timing.margin) + " margin of a "
                             + format_seconds(timing.ttl)
                             + " TTL (TTL/100 + 5ms";
  if (max >= timing.renew_interval) {
    check.status = CheckStatus::fail;
    check.message = measured + ": the renewal interval of the "
                    + format_seconds(timing.ttl) + " TTL (TTL/"
                    + std::to_string(lock::k_renew_divisor)
                    + ") or more, so renewals cannot get through in time; "
                      "use a much longer --ttl or a closer server";
  } else if (max > timing.margin) {
    check.status = CheckStatus::warn;
    check.message = measured + ": more than " + margin
                    + ", by which rlock stops a command before its lease "
                      "could end): still safe, as a lease counts from when "
                      "it was asked for, but each renewal spends a round trip "
                      "of the lease, and slow ones can end in a lost lock "
                      "(exit 70); use a longer --ttl or a closer server";
  } else {
    check.status = CheckStatus::ok;
    check.message = measured + ": within " + margin + ")";
  }
  return check;
}

// "2.00%" for 0.02.
std::string
percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f%%", fraction * 100);
  return text;
}

// Rounded half away from zero, as llround() does: without libm, whose
// pages every run would map for this one call.
Json
ppm_json(double fraction) {
  const double ppm = fraction * 1e6;
  return static_cast<long long>(ppm < 0 ? ppm - 0.5 : ppm + 0.5);
}

// Whether `rate` is off by more than k_max_clock_rate_error, however wrong
// the measurement.
bool
rate_off(const RateError& rate) {
  return std::abs(rate.error) > k_max_clock_rate_error + rate.bound;
}

// "127.0.0.1:6379's clock ran 2.00% fast against this host's over 250ms".
std::string
rate_text(const ServerFacts& facts, const RateError& rate) {
  return facts.address + "'s clock ran " + percent(std::abs(rate.error))
         + (rate.error > 0 ? " fast" : " slow") + " against this host's over "
         + format_ms(facts.clock_rate->local);
}

CheckResult
check_clock(const ServerFacts& facts) {
  auto check = named("clock");
  const auto rate = clock_rate_error(facts);
  check.values = {{"offset_ms", json_or_null(facts.clock_offset_ms)},
                  {"uncertainty_ms",
                   facts.clock_offset_ms ? ms_json(facts.clock_uncertainty)
                                         : Json(nullptr)},
                  {"rate_error_ppm", rate ? ppm_json(rate->error) : nullptr},
                  {"rate_bound_ppm", rate ? ppm_json(rate->bound) : nullptr}};
  if (!facts.clock_offset_ms) {
    check.message =
        "clock offset unknown: TIME refused (" + facts.time_error + ")";
    return check;
  }
  if (rate && rate_off(*rate)) {
    check.status = CheckStatus::warn;
    check.message = rate_text(facts, *rate)
                    + ": Redis expires leases by its clock, so one that runs "
                      "fast ends them early, by more than the 1% of the TTL "
                      "rlock allows for (NTP slews a clock by 0.05% at "
                      "most): check the Redis host's time source";
    return check;
  }
  const auto offset = *facts.clock_offset_ms;
  const auto size =
      format_duration(std::chrono::milliseconds(std::llabs(offset)));
  if (std::llabs(offset) <= k_max_clock_offset_ms) {
    check.status = CheckStatus::ok;
    check.message = "the server's clock is within " + size
                    + " of this host's; Redis expires leases by its wall "
                      "clock (a step there cuts them short), --once-per "
                      "slots begin by it";
    return check;
  }
  check.status = CheckStatus::warn;
  check.message =
      "the server's clock is " + size + (offset > 0 ? " ahead of" : " behind")
      + " this host's: Redis expires leases by its wall clock, so when the "
        "Redis host's clock is stepped forward every lease is cut short by "
        "the step (rlock notices at its next renewal and exits 70, but "
        "another holder may get in first; keep clocks slewed by NTP, not "
        "stepped); --once-per slots begin by the server's clock, so a cron "
        "line firing at a slot's edge can land in the slot before and be "
        "skipped as done; --events' time (this host) and status's "
        "acquired_at (the server) disagree by as much";
  return check;
}

int
rank(CheckStatus status) {
  switch (status) {
  case CheckStatus::ok:
    return 0;
  case CheckStatus::unknown:
    return 1;
  case CheckStatus::warn:
    return 2;
  case CheckStatus::fail:
    return 3;
  }
  return 3;
}

} // namespace

std::optional<RateError>
clock_rate_error(const ServerFacts& facts) {
  if (!facts.clock_rate || facts.clock_rate->local <= Duration::zero()) {
    return std::nullopt;
  }
  const auto local = static_cast<double>(facts.clock_rate->local.count());
  const RateError rate{
      static_cast<double>(facts.clock_rate->server.count()) / local - 1,
      static_cast<double>(facts.clock_rate->uncertainty.count()) / local};
  if (rate.bound > k_clock_rate_precision) {
    return std::nullopt;
  }
  return rate;
}

std::optional<std::vector<int>>
parse_version(std::string_view text) {
  std::vector<int> numbers;
  const char* position = text.data();
  const char* end = text.data() + text.size();
  while (numbers.size() < 3) {
    int number = 0;
    const auto [next, ec] = std::from_chars(position, end, number);
    if (ec != std::errc()) {
      break;
    }
    numbers.push_back(number);
    if (next == end || *next != '.') {
      break;
    }
    position = next + 1;
  }
  if (numbers.empty()) {
    return std::nullopt;
  }
  numbers.resize(3, 0);
  return numbers;
}

CheckResult
check_sentinels(const lock::DeploymentState& topology) {
  auto check = named("sentinels");
  int answered = 0;
  int agreeing = 0;
  int quorum_ok = 0;
  std::string trouble;
  auto details = nlohmann::ordered_json::array();
  for (const auto& sentinel : topology.sentinels) {
    details.push_back({{"address", sentinel.address},
                       {"master", sentinel.master},
                       {"quorum_check", sentinel.quorum_check},
                       {"error", sentinel.error}});
    if (!sentinel.error.empty()) {
      trouble += "; " + sentinel.address + " did not answer";
      continue;
    }
    ++answered;
    if (sentinel.master == topology.master) {
      ++agreeing;
    } else {
      trouble += "; " + sentinel.address + " names "
                 + (sentinel.master.empty() ? "no master" : sentinel.master);
    }
    if (sentinel.quorum_check.starts_with("OK")) {
      ++quorum_ok;
    } else {
      trouble += "; " + sentinel.address + ": " + sentinel.quorum_check;
    }
  }
  const auto total = topology.sentinels.size();
  check.values = {{"sentinels", total},
                  {"answered", answered},
                  {"agreeing", agreeing},
                  {"master", topology.master},
                  {"each", details}};
  check.message = std::to_string(agreeing) + " of " + std::to_string(total)
                  + " sentinels name " + topology.master + " as master "
                  + quote(topology.master_name);
  if (quorum_ok == 0) {
    check.status = CheckStatus::fail;
    check.message +=
        "; no sentinel can reach a quorum for a failover (SENTINEL "
        "CKQUORUM)"
        + trouble;
  } else if (agreeing == static_cast<int>(total)) {
    check.status = CheckStatus::ok;
    check.message += ", and a failover quorum can be reached";
  } else {
    check.status = CheckStatus::warn;
    check.message += trouble;
  }
  return check;
}

// Judges a failover that takes `detect` (Sentinel's down-after-milliseconds,
// Cluster's cluster-node-timeout: `setting`) plus an election against the
// TTL.
void
judge_failover(CheckResult& check,
               const std::string& setting,
               Duration detect,
               const lock::LeaseTiming& timing) {
  const std::string head = "a failover takes " + setting + " ("
                           + format_ms(detect)
                           + ") plus the election and promotion";
  if (detect >= timing.ttl) {
    check.status = CheckStatus::fail;
    check.message = head + ", at least the " + format_ms(timing.ttl)
                    + " TTL: every failover would stop the command (exit "
                      "70); use a longer --ttl or a lower "
                    + setting;
  } else if (detect + std::chrono::seconds(2) >= timing.ttl) {
    check.status = CheckStatus::warn;
    check.message = head + ", close to the " + format_ms(timing.ttl)
                    + " TTL: a failover may stop the command (exit 70)";
  } else {
    check.status = CheckStatus::ok;
    check.message = head + ", well within the " + format_ms(timing.ttl)
                    + " TTL: runs go on on the new master";
  }
}

CheckResult
check_failover(const lock::DeploymentState& topology,
               const lock::LeaseTiming& timing) {
  auto check = named("failover");
  std::optional<long long> down_after;
  for (const auto& sentinel : topology.sentinels) {
    const auto found = sentinel.settings.find("down-after-milliseconds");
    if (found != sentinel.settings.end()) {
      const auto value = to_integer(&found->second);
      if (value && (!down_after || *value > *down_after)) {
        down_after = value;
      }
    }
  }
  check.values = {{"down_after_ms", json_or_null(down_after)},
                  {"ttl_ms", ms_json(timing.ttl)}};
  if (!down_after) {
    check.message = "no sentinel told its down-after-milliseconds (SENTINEL "
                    "MASTER refused)";
    return check;
  }
  judge_failover(check,
                 "down-after-milliseconds",
                 std::chrono::milliseconds(*down_after),
                 timing);
  return check;
}

namespace {

using ClusterInfo = std::map<std::string, std::string>;

// Returns the value of `key` in a CLUSTER INFO, or nullptr.
const std::string*
info_field(const ClusterInfo& info, const std::string& key) {
  const auto found = info.find(key);
  return found == info.end() ? nullptr : &found->second;
}

Json
error_json(const std::string& error) {
  return error.empty() ? Json(nullptr) : Json(error);
}

// What the masters' CLUSTER INFO says, gathered for the `cluster` check.
struct ClusterView {
  std::vector<std::string> failing; // "why" a master or slot refuses locks
  std::vector<std::string> degraded;
  std::map<long long, std::vector<std::string>> known; // nodes -> masters
  int states_read = 0;
  Json each = Json::array();
};

void
read_shard_info(ClusterView& view, const lock::ClusterShardState& shard) {
  const auto* state = info_field(shard.cluster_info, "cluster_state");
  const auto slots_ok =
      to_integer(info_field(shard.cluster_info, "cluster_slots_ok"));
  const auto known =
      to_integer(info_field(shard.cluster_info, "cluster_known_nodes"));
  view.each.push_back({{"master", shard.master},
                       {"cluster_state", json_or_null(state)},
                       {"cluster_slots_ok", json_or_null(slots_ok)},
                       {"cluster_known_nodes", json_or_null(known)},
                       {"error", error_json(shard.error)}});
  if (!shard.error.empty()) {
    view.failing.push_back(shard.master + " did not answer (" + shard.error
                           + "): locks in its slots cannot be taken or "
                             "renewed");
    return;
  }
  if (state != nullptr) {
    ++view.states_read;
    if (*state != "ok") {
      view.failing.push_back(shard.master + " says cluster_state " + *state
                             + ": it refuses lock steps (CLUSTERDOWN)");
    }
  }
  if (slots_ok && *slots_ok < redis::k_cluster_slots) {
    view.degraded.push_back(shard.master + " sees " + std::to_string(*slots_ok)
                            + " of " + std::to_string(redis::k_cluster_slots)
                            + " slots ok (cluster_slots_ok)");
  }
  if (known) {
    view.known[*known].push_back(shard.master);
  }
}

// "6 nodes known", or how the masters disagree about it.
std::string
known_nodes_text(const ClusterView& view) {
  if (view.known.size() == 1) {
    return std::to_string(view.known.begin()->first) + " nodes known";
  }
  std::string text = "the masters know different numbers of nodes (";
  bool first = true;
  for (const auto& [count, masters] : view.known) {
    for (const auto& master : masters) {
      text += (first ? "" : ", ") + std::to_string(count) + " at " + master;
      first = false;
    }
  }
  return text + "): a node is joining or leaving, or a partition";
}

std::string
joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string text;
  for (const auto& part : parts) {
    text += (text.empty() ? "" : separator) + part;
  }
  return text;
}

// "replica 127.0.0.1:7003 online lag 0s, ..." or "no replica".
std::string
replicas_text(const std::vector<lock::ReplicaState>& replicas) {
  if (replicas.empty()) {
    return "no replica";
  }
  std::string text = replicas.size() == 1 ? "replica" : "replicas";
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    text +=
        (i == 0 ? " " : ", ") + replicas[i].address + " " + replicas[i].state;
    if (replicas[i].lag_s >= 0) {
      text += " lag " + std::to_string(replicas[i].lag_s) + "s";
    }
  }
  return text;
}

std::string
masters_count(std::size_t count) {
  return std::to_string(count) + (count == 1 ? " master" : " masters");
}

} // namespace

CheckResult
check_cluster(const lock::DeploymentState& topology) {
  auto check = named("cluster");
  ClusterView view;
  for (const auto& shard : topology.shards) {
    read_shard_info(view, shard);
  }
  if (!topology.uncovered_slots.empty()) {
    view.failing.insert(view.failing.begin(),
                        "slots "
                            + redis::format_slot_spans(topology.uncovered_slots)
                            + " are served by no master: a lock whose key "
                              "falls there cannot be taken");
  }
  check.values = {
      {"masters", topology.shards.size()},
      {"uncovered_slots", redis::format_slot_spans(topology.uncovered_slots)},
      {"each", view.each}};
  const std::string served =
      topology.uncovered_slots.empty()
          ? "all " + std::to_string(redis::k_cluster_slots) + " slots served"
          : "";
  if (!view.failing.empty()) {
    check.status = CheckStatus::fail;
    check.message = joined(view.failing, "; ");
  } else if (view.states_read == 0) {
    check.message =
        "cluster_state unknown: no master told its CLUSTER INFO; " + served;
  } else if (!view.degraded.empty() || view.known.size() > 1) {
    check.status = CheckStatus::warn;
    auto trouble = view.degraded;
    if (view.known.size() > 1) {
      trouble.push_back(known_nodes_text(view));
    }
    check.message =
        "cluster_state ok, " + served + ", but " + joined(trouble, "; ");
  } else {
    check.status = CheckStatus::ok;
    check.message = "cluster_state ok on all "
                    + masters_count(topology.shards.size()) + ", " + served
                    + (view.known.empty() ? "" : ", " + known_nodes_text(view));
  }
  return check;
}

namespace {

std::size_t
online_replicas(const lock::ClusterShardState& shard) {
  return static_cast<std::size_t>(std::count_if(
      shard.replicas.begin(), shard.replicas.end(), [](const auto& replica) {
        return replica.state == "online";
      }));
}

} // namespace

CheckResult
check_cluster_replicas(const lock::DeploymentState& topology) {
  auto check = named("replicas");
  std::vector<std::string> lacking;
  std::vector<std::string> silent;
  std::int64_t worst_lag = -1;
  auto each = Json::array();
  for (const auto& shard : topology.shards) {
    const auto online = online_replicas(shard);
    each.push_back({{"master", shard.master},
                    {"replicas", shard.replicas.size()},
                    {"online", online},
                    {"error", error_json(shard.error)}});
    if (!shard.error.empty()) {
      silent.push_back(shard.master);
      continue;
    }
    if (online == 0) {
      lacking.push_back(shard.master + " (" + std::to_string(shard.slots)
                        + " slots)");
    }
    for (const auto& replica : shard.replicas) {
      worst_lag = std::max(worst_lag, replica.lag_s);
    }
  }
  check.values = {
      {"worst_lag_s", worst_lag < 0 ? Json(nullptr) : Json(worst_lag)},
      {"each", each}};
  if (!lacking.empty()) {
    check.status = CheckStatus::warn;
    check.message =
        "no replica online for " + joined(lacking, ", ")
        + ": if such a master fails, no replica that has its locks can take "
          "over: they are unavailable until it is back, and lost unless its "
          "persistence kept them; give every master a replica";
  } else if (!silent.empty()) {
    check.message = "replicas unknown for " + joined(silent, ", ")
                    + ", which did not answer";
  } else {
    check.status = CheckStatus::ok;
    check.message =
        "every master has a replica online"
        + (worst_lag >= 0 ? " (lag up to " + std::to_string(worst_lag) + "s)"
                          : std::string())
        + ": when a master fails, one of its replicas takes over its slots "
          "and locks";
  }
  return check;
}

CheckResult
check_cluster_failover(const lock::DeploymentState& topology,
                       const lock::LeaseTiming& timing) {
  auto check = named("failover");
  std::optional<long long> node_timeout;
  auto each = Json::object();
  for (const auto& shard : topology.shards) {
    const bool told = shard.error.empty() && shard.node_timeout_ms >= 0;
    each[shard.master] = told ? Json(shard.node_timeout_ms) : Json(nullptr);
    if (told && (!node_timeout || shard.node_timeout_ms > *node_timeout)) {
      node_timeout = shard.node_timeout_ms;
    }
  }
  check.values = {{"node_timeout_ms", json_or_null(node_timeout)},
                  {"ttl_ms", ms_json(timing.ttl)},
                  {"each", each}};
  if (!node_timeout) {
    check.message = "no master told its cluster-node-timeout (CONFIG GET "
                    "refused, as managed services do): a failover takes it "
                    "plus the election, and the "
                    + format_ms(timing.ttl) + " TTL must outlast that";
    return check;
  }
  judge_failover(check,
                 "cluster-node-timeout",
                 std::chrono::milliseconds(*node_timeout),
                 timing);
  return check;
}

namespace {

// The master whose slot spans hold `slot`, or nullptr.
const lock::ClusterShardState*
shard_of(const lock::DeploymentState& topology, int slot) {
  for (const auto& shard : topology.shards) {
    for (const auto& span : shard.slot_spans) {
      if (span.first <= slot && slot <= span.last) {
        return &shard;
      }
    }
  }
  return nullptr;
}

void
judge_cluster_name(CheckResult& check,
                   const lock::DeploymentState& topology,
                   const std::string& head,
                   int slot) {
  const auto* shard = shard_of(topology, slot);
  check.values["master"] =
      shard == nullptr ? Json(nullptr) : Json(shard->master);
  if (shard == nullptr) {
    check.status = CheckStatus::fail;
    check.message = head
                    + ", which no master serves: the lock cannot be taken "
                      "until one does";
  } else if (!shard->error.empty()) {
    check.status = CheckStatus::fail;
    check.message = head + ", served by " + shard->master
                    + ", which did not answer (" + shard->error + ")";
  } else if (const auto* state =
                 info_field(shard->cluster_info, "cluster_state");
             state != nullptr && *state != "ok") {
    check.status = CheckStatus::fail;
    check.message = head + ", served by " + shard->master
                    + ", which says cluster_state " + *state
                    + ": the lock cannot be taken now (CLUSTERDOWN)";
  } else {
    check.status = CheckStatus::ok;
    check.message = head + ", served by " + shard->master + " ("
                    + replicas_text(shard->replicas) + ")";
  }
}

} // namespace

bool
did_not_answer(const ServerFacts& facts) {
  // examine_server() always says something of TIME; a server that did not
  // answer has only its address and why.
  return !facts.clock_offset_ms && facts.time_error.empty()
         && facts.round_trips.empty() && !facts.info_error.empty();
}

namespace {

// The servers of `facts` that answered.
std::vector<const ServerFacts*>
answering(const std::vector<ServerFacts>& facts) {
  std::vector<const ServerFacts*> servers;
  for (const auto& server : facts) {
    if (!did_not_answer(server)) {
      servers.push_back(&server);
    }
  }
  return servers;
}

std::string
servers_count(std::size_t count) {
  return std::to_string(count) + (count == 1 ? " server" : " servers");
}

} // namespace

CheckResult
check_quorum(const std::vector<ServerFacts>& facts,
             const lock::DeploymentState& topology) {
  auto check = named("quorum");
  const auto total = facts.size();
  const auto answered = answering(facts).size();
  const auto quorum = static_cast<std::size_t>(std::max(topology.quorum, 0));
  std::vector<std::string> silent;
  for (const auto& server : facts) {
    if (did_not_answer(server)) {
      silent.push_back(server.address);
    }
  }
  check.values = {{"servers", total},
                  {"quorum", quorum},
                  {"answered", answered},
                  {"silent", silent}};
  check.message = servers_count(total) + ", quorum " + std::to_string(quorum)
                  + ", " + std::to_string(answered) + " answered";
  if (answered >= quorum) {
    check.status = CheckStatus::ok;
    const auto spare = answered - quorum;
    check.message += spare == 0 ? ": one more down and no lock can be taken"
                                : ": locks can be taken with "
                                      + std::to_string(spare) + " more down";
  } else {
    check.status = CheckStatus::fail;
    check.message += ": no lock can be taken or renewed until "
                     + std::to_string(quorum - answered) + " more answer";
  }
  if (!silent.empty()) {
    check.message += " (" + joined(silent, ", ") + " did not)";
  }
  return check;
}

namespace {

// "127.0.0.1:6380, a replica of 127.0.0.1:6379 (another of them)".
std::string
replica_text(const ServerFacts& server,
             const std::vector<const ServerFacts*>& servers) {
  const auto* host = find(server.info, "master_host");
  const auto port = to_integer(find(server.info, "master_port"));
  if (host == nullptr || !port) {
    return server.address + " is a replica";
  }
  const auto master = redis::HostPort{*host, static_cast<int>(*port)}.address();
  const bool among = std::any_of(
      servers.begin(), servers.end(), [&](const ServerFacts* other) {
        return other != &server && other->address == master;
      });
  return server.address + " is a replica of " + master
         + (among ? " (another of them)" : "");
}

} // namespace

CheckResult
check_independent(const std::vector<ServerFacts>& facts) {
  auto check = named("independent");
  const auto servers = answering(facts);
  std::map<std::string, std::vector<std::string>> by_run_id;
  std::vector<std::string> failing;
  std::vector<std::string> untold;
  auto each = Json::array();
  for (const auto* server : servers) {
    const auto* run_id = find(server->info, "run_id");
    const auto* role = find(server->info, "role");
    each.push_back({{"server", server->address},
                    {"run_id", json_or_null(run_id)},
                    {"role", json_or_null(role)}});
    if (run_id == nullptr || role == nullptr) {
      untold.push_back(server->address);
    }
    if (run_id != nullptr) {
      by_run_id[*run_id].push_back(server->address);
    }
    if (role != nullptr && *role != "master") {
      failing.push_back(*role == "slave" || *role == "replica"
                            ? replica_text(*server, servers)
                            : server->address + " has role " + quote(*role));
    }
  }
  for (const auto& [run_id, addresses] : by_run_id) {
    if (addresses.size() > 1) {
      failing.insert(failing.begin(),
                     joined(addresses, " and ") + " are one server (run_id "
                         + run_id + ")");
    }
  }
  check.values = {{"each", each}};
  if (!failing.empty()) {
    check.status = CheckStatus::fail;
    check.message = joined(failing, "; ")
                    + ": a quorum needs independent masters, each its own "
                      "vote; a replica refuses locks (READONLY) and can be "
                      "promoted with the locks its master granted";
  } else if (!untold.empty()) {
    check.message = "run_id or role unknown for " + joined(untold, ", ")
                    + " (INFO refused): cannot tell that the servers are "
                      "independent masters";
  } else {
    check.status = CheckStatus::ok;
    check.message = "the " + servers_count(servers.size())
                    + " that answered are masters with distinct run_ids, "
                      "none a replica";
  }
  return check;
}

namespace {

// Whether `server` keeps its locks through a restart (appendonly yes with
// appendfsync always), or nothing when CONFIG GET did not tell.
std::optional<bool>
keeps_locks(const ServerFacts& server) {
  const auto* appendonly = find(server.config, "appendonly");
  const auto* fsync = find(server.config, "appendfsync");
  if (appendonly != nullptr && *appendonly != "yes") {
    return false;
  }
  const auto* aof = find(server.info, "aof_enabled");
  if (appendonly == nullptr && aof != nullptr && *aof == "0") {
    return false;
  }
  if (fsync == nullptr) {
    return std::nullopt;
  }
  return *fsync == "always";
}

} // namespace

CheckResult
check_restarts(const std::vector<ServerFacts>& facts,
               const lock::LeaseTiming& timing,
               Duration restart_grace) {
  auto check = named("restarts");
  std::vector<std::string> forgetting;
  std::vector<std::string> untold;
  std::vector<std::string> young;
  auto each = Json::array();
  for (const auto* server : answering(facts)) {
    const auto keeps = keeps_locks(*server);
    const auto uptime = to_integer(find(server->info, "uptime_in_seconds"));
    each.push_back({{"server", server->address},
                    {"keeps_locks", keeps ? Json(*keeps) : Json(nullptr)},
                    {"uptime_s", json_or_null(uptime)}});
    if (!keeps) {
      untold.push_back(server->address);
    } else if (!*keeps) {
      forgetting.push_back(server->address);
    }
    if (keeps != true && uptime && std::chrono::seconds(*uptime) < timing.ttl) {
      young.push_back(server->address + " up "
                      + format_duration(std::chrono::seconds(*uptime)));
    }
  }
  const bool graced = restart_grace >= timing.ttl;
  check.values = {{"ttl_ms", ms_json(timing.ttl)},
                  {"restart_grace_ms", ms_json(restart_grace)},
                  {"each", each}};
  const std::string grace = "--restart-grace " + format_seconds(restart_grace);
  const std::string ttl = "the " + format_seconds(timing.ttl) + " TTL";
  std::vector<std::string> parts;
  if (!forgetting.empty()) {
    const bool all = forgetting.size() == answering(facts).size();
    parts.push_back(
        (all && forgetting.size() > 1
             ? "all " + std::to_string(forgetting.size()) + " servers"
             : joined(forgetting, ", "))
        + " forget their locks on a restart (not appendonly yes with "
          "appendfsync always)"
        + (graced ? ", but " + grace + " is at least " + ttl
                        + ": a restarted server grants nothing until the "
                          "leases it granted have run out"
                  : " and " + grace + " is below " + ttl
                        + ": a restarted server can grant a held lock to a "
                          "second holder; set --restart-grace to the TTL "
                          "or more"));
  }
  if (!young.empty()) {
    parts.push_back(joined(young, ", ") + ", less than " + ttl
                    + ": one that restarted during a hold forgot the locks it "
                      "granted");
  }
  if (!untold.empty()) {
    parts.push_back("persistence unknown for " + joined(untold, ", "));
  }
  if ((!forgetting.empty() && !graced) || !young.empty()) {
    check.status = CheckStatus::warn;
  } else if (!untold.empty()) {
    check.status = CheckStatus::unknown;
  } else {
    check.status = CheckStatus::ok;
    if (forgetting.empty()) {
      parts.push_back("every server keeps its locks through a restart "
                      "(appendonly yes, appendfsync always)");
    }
  }
  check.message = joined(parts, "; ");
  return check;
}

CheckResult
check_clocks(const std::vector<ServerFacts>& facts,
             const lock::LeaseTiming& timing) {
  auto check = named("clocks");
  const Duration allowance = timing.ttl / 100 + std::chrono::milliseconds(2);
  const ServerFacts* ahead = nullptr;
  const ServerFacts* behind = nullptr;
  std::vector<std::string> untold;
  std::vector<std::string> off_rate;
  std::vector<std::string> unrated;
  double worst_rate = 0;
  auto each = Json::array();
  for (const auto* server : answering(facts)) {
    const auto rate = clock_rate_error(*server);
    each.push_back(
        {{"server", server->address},
         {"offset_ms", json_or_null(server->clock_offset_ms)},
         {"rate_error_ppm", rate ? ppm_json(rate->error) : nullptr}});
    if (!server->clock_offset_ms) {
      untold.push_back(server->address);
      continue;
    }
    if (!rate) {
      unrated.push_back(server->address);
    } else if (rate_off(*rate)) {
      off_rate.push_back(rate_text(*server, *rate));
    } else {
      worst_rate = std::max(worst_rate, std::abs(rate->error) + rate->bound);
    }
    const auto offset = *server->clock_offset_ms;
    if (ahead == nullptr || offset > *ahead->clock_offset_ms) {
      ahead = server;
    }
    if (behind == nullptr || offset < *behind->clock_offset_ms) {
      behind = server;
    }
  }
  const auto spread =
      ahead == nullptr ? std::optional<long long>()
                       : std::optional<long long>(*ahead->clock_offset_ms
                                                  - *behind->clock_offset_ms);
  check.values = {{"spread_ms", json_or_null(spread)},
                  {"allowance_ms", ms_json(allowance)},
                  {"each", each}};
  const std::string allowed = "the " + format_ms(allowance)
                              + " rlock allows for (1% of the "
                              + format_seconds(timing.ttl) + " TTL + 2ms)";
  const std::string rates =
      unrated.empty()
          ? "; each ran at this host's rate within " + percent(worst_rate)
          : "; rate not measured for " + joined(unrated, ", ");
  const auto told =
      std::count_if(facts.begin(), facts.end(), [](const ServerFacts& server) {
        return server.clock_offset_ms.has_value();
      });
  if (told < 2) {
    check.message =
        "clocks unknown: fewer than two servers told their TIME"
        + (untold.empty() ? "" : " (" + joined(untold, ", ") + " refused it)");
  } else if (!off_rate.empty()) {
    check.status = CheckStatus::warn;
    check.message = joined(off_rate, "; ")
                    + ": a server whose clock runs fast ends the leases it "
                      "keeps early, by more than the 1% of the TTL rlock "
                      "allows for; check its time source";
  } else if (std::chrono::milliseconds(*spread) > allowance) {
    check.status = CheckStatus::warn;
    check.message = "the clocks of " + ahead->address + " and "
                    + behind->address + " differ by "
                    + format_ms(std::chrono::milliseconds(*spread))
                    + ", more than " + allowed
                    + ": clocks this far apart are not kept in step (NTP), "
                      "and one that runs fast ends the leases it keeps early"
                    + rates;
  } else {
    check.status = CheckStatus::ok;
    check.message = "the servers' clocks are within "
                    + format_ms(std::chrono::milliseconds(*spread))
                    + " of each other, within " + allowed + rates;
  }
  return check;
}

CheckResult
check_name(const NamedLock& lock,
           const std::string& server,
           const DeploymentFacts& deployment) {
  auto check = named("name");
  check.values = {{"name", lock.name}, {"key", lock.key}, {"slot", nullptr}};
  const std::string head =
      "lock " + quote(lock.name) + " is key " + quote(lock.key);
  const auto& topology = deployment.topology;
  if (topology && topology->is_cluster()) {
    const int slot = redis::key_slot(lock.key);
    check.values["slot"] = slot;
    judge_cluster_name(
        check, *topology, head + " in slot " + std::to_string(slot), slot);
    return check;
  }
  check.status = CheckStatus::ok;
  if (topology && topology->quorum > 0) {
    check.values["master"] = nullptr;
    check.message = head + " on each of the "
                    + servers_count(topology->quorum_servers.size())
                    + ", held when " + std::to_string(topology->quorum)
                    + " of them agree";
    return check;
  }
  check.values["master"] = server;
  check.message = head + " on " + server;
  if (topology) {
    check.message +=
        ", the master the sentinels name " + quote(topology->master_name);
  }
  return check;
}

std::vector<CheckResult>
diagnose(const ServerFacts& facts,
         const lock::LeaseTiming& timing,
         const DeploymentFacts& deployment) {
  std::vector<CheckResult> checks{check_version(facts),
                                  check_eviction(facts),
                                  check_persistence(facts),
                                  check_replication(facts, deployment.replicas),
                                  check_latency(facts, timing),
                                  check_clock(facts)};
  const auto& topology = deployment.topology;
  if (topology && !topology->is_cluster() && topology->quorum == 0) {
    checks.push_back(check_sentinels(*topology));
    checks.push_back(check_failover(*topology, timing));
  }
  return checks;
}

std::string_view
status_name(CheckStatus status) {
  switch (status) {
  case CheckStatus::ok:
    return "ok";
  case CheckStatus::warn:
    return "warn";
  case CheckStatus::fail:
    return "fail";
  case CheckStatus::unknown:
    return "unknown";
  }
  return "unknown";
}

std::string
format_doctor_text(const std::vector<CheckResult>& checks) {
  std::string text;
  for (const auto& check : checks) {
    std::string status(status_name(check.status));
    status.resize(std::max(status.size() + 1, k_status_width), ' ');
    std::string name = check.name;
    name.resize(std::max(name.size() + 2, k_name_width), ' ');
    // Server replies may hold anything; one check stays one line.
    text += status + name + printable(check.message) + "\n";
  }
  return text;
}

namespace {

// Returns {NAME: {"status", "message", "values"}}; raises `worst`.
Json
checks_json(const std::vector<CheckResult>& checks, CheckStatus& worst) {
  auto entries = Json::object();
  for (const auto& check : checks) {
    if (rank(check.status) > rank(worst)) {
      worst = check.status;
    }
    entries[check.name] = {{"status", status_name(check.status)},
                           {"message", check.message},
                           {"values", check.values}};
  }
  return entries;
}

std::string
dump(const Json& document) {
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// The checks of a deployment that is not a Cluster, in one list.
std::vector<CheckResult>
flattened(const DoctorReport& report) {
  std::vector<CheckResult> checks;
  for (const auto& server : report.servers) {
    checks.insert(checks.end(), server.checks.begin(), server.checks.end());
  }
  checks.insert(
      checks.end(), report.deployment.begin(), report.deployment.end());
  return checks;
}

// Each master of `topology` with its checks from `facts`, in slot order;
// then any server of `facts` no master names.
std::vector<ServerChecks>
masters_checked(const std::vector<ServerFacts>& facts,
                const lock::LeaseTiming& timing,
                const DeploymentFacts& deployment) {
  std::vector<ServerChecks> servers;
  std::vector<bool> used(facts.size(), false);
  for (const auto& shard : deployment.topology->shards) {
    ServerChecks server{
        shard.master, redis::format_slot_spans(shard.slot_spans), {}, {}};
    const auto found =
        std::find_if(facts.begin(), facts.end(), [&](const ServerFacts& each) {
          return each.address == shard.master;
        });
    if (found == facts.end()) {
      server.error = shard.error.empty() ? "no reason given" : shard.error;
    } else {
      used[static_cast<std::size_t>(found - facts.begin())] = true;
      server.checks = diagnose(*found, timing, deployment);
    }
    servers.push_back(std::move(server));
  }
  for (std::size_t i = 0; i < facts.size(); ++i) {
    if (!used[i]) {
      servers.push_back(
          {facts[i].address, {}, diagnose(facts[i], timing, deployment), {}});
    }
  }
  return servers;
}

} // namespace

std::string
format_doctor_json(const std::string& address,
                   const std::vector<CheckResult>& checks) {
  auto worst = CheckStatus::ok;
  auto entries = checks_json(checks, worst);
  return dump({{"server", address},
               {"status", status_name(worst)},
               {"checks", entries}});
}

int
doctor_exit_code(const std::vector<CheckResult>& checks) {
  const bool all_ok =
      std::all_of(checks.begin(), checks.end(), [](const auto& check) {
        return check.status == CheckStatus::ok;
      });
  return all_ok ? exit_code::k_success : exit_code::k_failure;
}

namespace {

// Each server of a quorum with its checks, in the order of `facts`; one that
// did not answer says why.
std::vector<ServerChecks>
quorum_checked(const std::vector<ServerFacts>& facts,
               const lock::LeaseTiming& timing,
               const DeploymentFacts& deployment) {
  std::vector<ServerChecks> servers;
  for (const auto& server : facts) {
    if (did_not_answer(server)) {
      servers.push_back({server.address, {}, {}, server.info_error});
    } else {
      servers.push_back(
          {server.address, {}, diagnose(server, timing, deployment), {}});
    }
  }
  return servers;
}

} // namespace

DoctorReport
diagnose_all(const std::vector<ServerFacts>& facts,
             const lock::LeaseTiming& timing,
             const DeploymentFacts& deployment,
             const std::optional<NamedLock>& name) {
  DoctorReport report;
  const auto& topology = deployment.topology;
  report.cluster = topology && topology->is_cluster();
  report.quorum = topology && !report.cluster && topology->quorum > 0;
  if (report.cluster) {
    report.servers = masters_checked(facts, timing, deployment);
    report.deployment = {check_cluster(*topology),
                         check_cluster_replicas(*topology),
                         check_cluster_failover(*topology, timing)};
  } else if (report.quorum) {
    report.servers = quorum_checked(facts, timing, deployment);
    report.deployment = {
        check_quorum(facts, *topology),
        check_independent(facts),
        check_restarts(facts, timing, deployment.restart_grace),
        check_clocks(facts, timing)};
  } else {
    for (const auto& server : facts) {
      report.servers.push_back(
          {server.address, {}, diagnose(server, timing, deployment), {}});
    }
  }
  if (name) {
    const auto server = facts.empty() ? std::string() : facts.front().address;
    report.deployment.push_back(check_name(*name, server, deployment));
  }
  return report;
}

std::string
format_doctor_text(const DoctorReport& report) {
  if (!report.cluster && !report.quorum) {
    return format_doctor_text(flattened(report));
  }
  const std::string kind = report.cluster ? "master " : "server ";
  std::string text;
  for (const auto& server : report.servers) {
    text += kind + server.address
            + (server.slots.empty() ? "" : " (slots " + server.slots + ")")
            + (server.error.empty()
                   ? "\n" + format_doctor_text(server.checks)
                   : ": did not answer (" + printable(server.error) + ")\n")
            + "\n";
  }
  return text + (report.cluster ? "cluster\n" : "redlock\n")
         + format_doctor_text(report.deployment);
}

std::string
format_doctor_json(const DoctorReport& report) {
  if (!report.cluster && !report.quorum) {
    return format_doctor_json(
        report.servers.empty() ? "" : report.servers.front().address,
        flattened(report));
  }
  auto worst = CheckStatus::ok;
  auto servers = Json::array();
  for (const auto& server : report.servers) {
    auto server_worst =
        server.error.empty() ? CheckStatus::ok : CheckStatus::fail;
    auto entries = checks_json(server.checks, server_worst);
    Json entry = {{"server", server.address}};
    if (report.cluster) {
      entry["slots"] = server.slots;
    }
    entry["status"] = status_name(server_worst);
    entry["checks"] = entries;
    entry["error"] = error_json(server.error);
    servers.push_back(std::move(entry));
    worst = rank(server_worst) > rank(worst) ? server_worst : worst;
  }
  auto entries = checks_json(report.deployment, worst);
  return dump({{"status", status_name(worst)},
               {"checks", entries},
               {report.cluster ? "masters" : "servers", servers}});
}

int
doctor_exit_code(const DoctorReport& report) {
  const bool silent =
      std::any_of(report.servers.begin(),
                  report.servers.end(),
                  [](const auto& server) { return !server.error.empty(); });
  return silent ? exit_code::k_failure : doctor_exit_code(flattened(report));
}

} // namespace rlock::cli
