#include <rlock/cli/doctor_quorum.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace rlock::cli {

using namespace doctor;

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

bool
did_not_answer(const ServerFacts& facts) {
  // examine_server() always says something of TIME; a server that did not
  // answer has only its address and why.
  return !facts.clock_offset_ms && facts.time_error.empty()
         && facts.round_trips.empty() && !facts.info_error.empty();
}

CheckResult
check_quorum(const std::vector<ServerFacts>& facts,
             const lock::QuorumDeploymentState& topology) {
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

} // namespace rlock::cli
