#include <rlock/cli/doctor_server.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace rlock::cli {

using namespace doctor;

namespace {

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

Duration
median(std::vector<Duration> values) {
  std::sort(values.begin(), values.end());
  const auto middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle]
                                : (values[middle - 1] + values[middle]) / 2;
}

} // namespace

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

namespace {

// The Redis version `facts`' server is compatible with, which the minimum
// is judged against: redis_version (Valkey pins it at 7.2.4, where it
// forked), else, for a Valkey that told only its own version (HELLO), 7.2.4.
std::string
compatible_redis_version(const ServerFacts& facts) {
  if (!facts.version.empty()) {
    return facts.version;
  }
  if (facts.server_name == "valkey" && !facts.server_version.empty()) {
    return std::string(k_valkey_redis_version);
  }
  return {};
}

} // namespace

CheckResult
check_version(const ServerFacts& facts) {
  auto check = named("version");
  const auto version = parse_version(compatible_redis_version(facts));
  const auto minimum = parse_version(k_min_redis_version).value();
  const auto text_or_null = [](const std::string& text) {
    return text.empty() ? Json(nullptr) : Json(text);
  };
  check.values = {
      {"redis_version", text_or_null(facts.version)},
      {"server_name", text_or_null(facts.server_name)},
      {"server_version", text_or_null(facts.server_version)},
      {"minimum", k_min_redis_version},
      {"scripts_run", facts.script_error.empty()},
      {"script_error",
       facts.script_error.empty() ? Json(nullptr) : Json(facts.script_error)}};
  const std::string needs =
      "rlock needs Redis 4.0 or later (Lua scripts with EVALSHA, PEXPIRE, "
      "HSET of several fields)";
  const std::string redis =
      lock::server_label(
          {facts.server_name.empty() ? "redis" : facts.server_name,
           facts.server_version.empty() ? facts.version : facts.server_version})
      + " at " + facts.address;
  if (version && *version < minimum) {
    check.status = CheckStatus::fail;
    check.message = redis + " is too old: " + needs
                    + (facts.server_name.empty() || facts.server_name == "redis"
                           ? ""
                           : " (it reports Redis " + facts.version + ")");
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

namespace {

// "5s", "2m10s": whole seconds, as INFO counts them.
std::string
whole(std::chrono::seconds duration) {
  return duration < std::chrono::minutes(1)
             ? std::to_string(duration.count()) + "s"
             : format_duration(duration);
}

} // namespace

CheckResult
check_holdback(const ServerFacts& facts, Duration grace) {
  using std::chrono::seconds;
  auto check = named("holdback");
  const auto uptime = to_integer(find(facts.info, "uptime_in_seconds"));
  const bool copy = lock::holds_synced_copy(facts.info);
  const std::string option = "--restart-grace " + format_seconds(grace);
  // As the lock steps count it (lock::latest_start()): more than uptime - 1
  // seconds surely passed.
  const auto up = seconds(std::max<long long>(uptime.value_or(0) - 1, 0));
  const auto left = grace - up;
  const bool held = uptime && !copy && left > Duration::zero();
  check.values = {
      {"restart_grace_ms", ms_json(grace)},
      {"uptime_s", json_or_null(uptime)},
      {"synced_copy", copy},
      {"held_back_ms",
       held ? Json(std::chrono::ceil<std::chrono::milliseconds>(left).count())
            : Json(nullptr)}};
  if (!uptime) {
    check.status = CheckStatus::unknown;
    check.message = "cannot tell when " + facts.address + " started ("
                    + why_unknown(facts, false) + "): with " + option
                    + " every run fails at once (exit 69), since without "
                      "INFO rlock cannot tell a server that restarted empty; "
                      "allow INFO or set --restart-grace 0";
  } else if (held) {
    check.status = CheckStatus::warn;
    check.message =
        facts.address + " started " + whole(seconds(*uptime))
        + " ago: locks are held back for "
        + whole(std::chrono::ceil<seconds>(left)) + " more (" + option
        + "), since a holder from before a restart may still run; until then "
          "runs wait, and -n exits 75";
  } else if (copy && grace > up) {
    check.status = CheckStatus::ok;
    check.message = facts.address + " started " + whole(seconds(*uptime))
                    + " ago but holds a copy synced from its former master: "
                      "not held back ("
                    + option + ")";
  } else {
    check.status = CheckStatus::ok;
    check.message = facts.address + " has been up " + whole(seconds(*uptime))
                    + ", longer than " + option + ": locks are not held back";
  }
  return check;
}

} // namespace rlock::cli
