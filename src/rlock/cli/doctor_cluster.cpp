#include <rlock/cli/doctor_cluster.hpp>
#include <rlock/redis/cluster.hpp>

#include <algorithm>
#include <map>

namespace rlock::cli {

using namespace doctor;

namespace {

using ClusterInfo = std::map<std::string, std::string>;

// Returns the value of `key` in a CLUSTER INFO, or nullptr.
const std::string*
info_field(const ClusterInfo& info, const std::string& key) {
  const auto found = info.find(key);
  return found == info.end() ? nullptr : &found->second;
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

std::size_t
online_replicas(const lock::ClusterShardState& shard) {
  return static_cast<std::size_t>(std::count_if(
      shard.replicas.begin(), shard.replicas.end(), [](const auto& replica) {
        return replica.state == "online";
      }));
}

// The master whose slot spans hold `slot`, or nullptr.
const lock::ClusterShardState*
shard_of(const lock::ClusterDeploymentState& topology, int slot) {
  for (const auto& shard : topology.shards) {
    for (const auto& span : shard.slot_spans) {
      if (span.first <= slot && slot <= span.last) {
        return &shard;
      }
    }
  }
  return nullptr;
}

} // namespace

CheckResult
check_cluster(const lock::ClusterDeploymentState& topology) {
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

CheckResult
check_cluster_replicas(const lock::ClusterDeploymentState& topology) {
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
check_cluster_failover(const lock::ClusterDeploymentState& topology,
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

void
judge_cluster_name(CheckResult& check,
                   const lock::ClusterDeploymentState& topology,
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

} // namespace rlock::cli
