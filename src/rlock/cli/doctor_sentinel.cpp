#include <rlock/cli/doctor_sentinel.hpp>
#include <rlock/util/text.hpp>

namespace rlock::cli {

using namespace doctor;

CheckResult
check_sentinels(const lock::SentinelDeploymentState& topology) {
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

CheckResult
check_failover(const lock::SentinelDeploymentState& topology,
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

} // namespace rlock::cli
