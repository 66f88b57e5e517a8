#include <rlock/cli/status_view.hpp>
#include <rlock/redis/cluster.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/duration.hpp>
#include <rlock/util/text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace rlock::cli {

namespace {

using Row = std::vector<std::string>;

// When the table would not fit, NAME and HOLDER give up their middles down to
// these widths: both ends stay, so two long names still look different.
constexpr std::size_t k_name_cut = 24;
constexpr std::size_t k_holder_cut = 28;
// If the table still does not fit (fences have 16 digits), they give up more,
// down to this.
constexpr std::size_t k_min_cut = 12;

std::string
ttl_text(const lock::LockState& state) {
  return state.ttl_ms < 0 ? "none"
                          : format_duration(from_milliseconds(state.ttl_ms));
}

// How long a lease acquired at `acquired_ms` has been held at `now_ms`.
std::string
held_text(std::int64_t now_ms, std::int64_t acquired_ms) {
  if (acquired_ms == 0) {
    return "-"; // not recorded: an application's lock (--compat)
  }
  std::int64_t held_ms = 0;
  if (__builtin_sub_overflow(now_ms, acquired_ms, &held_ms)) {
    held_ms = 0; // a broken acquired_ms
  }
  return format_duration(from_milliseconds(std::max<std::int64_t>(held_ms, 0)));
}

// A quorum's lock: on how many servers its token is, of how many, and
// "split" when servers name different tokens ("3/5", "2/5 split").
std::string
servers_text(const lock::LockState& state) {
  static const std::vector<lock::ServerLockState> none;
  const auto& servers = state.quorum ? state.quorum->servers : none;
  std::size_t agreeing = 0;
  bool split = false;
  for (const auto& server : servers) {
    if (!server.held) {
      continue;
    }
    if (server.token == state.token) {
      ++agreeing;
    } else {
      split = true;
    }
  }
  return std::to_string(agreeing) + "/" + std::to_string(servers.size())
         + (split ? " split" : "");
}

// One row; the SERVERS cell only when `with_servers`, the QUEUE cell only
// when `with_queue`. COMMAND comes last.
Row
row_of(const lock::LockState& state,
       std::int64_t now_ms,
       bool with_servers,
       bool with_queue) {
  Row row{printable(state.name)};
  if (!state.held) {
    row.insert(row.end(), {"-", "-", "-", "-"});
  } else {
    row.insert(row.end(),
               {printable(state.user.empty() && state.pid == 0
                              // An application's (--compat): its host, if
                              // its value names one.
                              ? (state.host.empty() ? "-" : state.host)
                              : state.user + "@" + state.host + ":"
                                    + std::to_string(state.pid)),
                held_text(now_ms, state.acquired_ms),
                ttl_text(state),
                state.fence > 0 ? std::to_string(state.fence) : "-"});
  }
  if (with_servers) {
    row.push_back(servers_text(state));
  }
  if (with_queue) {
    row.push_back(std::to_string(state.waiters));
  }
  row.push_back(state.held ? printable(state.command) : "(free)");
  return row;
}

// The characters of a holder's token the table shows: enough to tell
// holders apart and to match $RLOCK_TOKEN (--json has it whole).
constexpr std::size_t k_token_shown = 12;

// A semaphore's rows: "HELD 2/3" with its last lease's TTL, then one row
// per holder, its NAME cell the slot and the token's start. A shared lock's
// alike: "SHARED 2", and the token's start alone.
std::vector<Row>
semaphore_rows(const lock::LockState& state,
               std::int64_t now_ms,
               bool with_servers,
               bool with_queue) {
  const bool shared = state.limit == lock::k_shared_limit;
  const std::string count = std::to_string(state.holders.size());
  Row head{printable(state.name),
           shared ? "SHARED " + count
                  : "HELD " + count + "/" + std::to_string(state.limit),
           "-",
           ttl_text(state),
           "-"};
  if (with_servers) {
    head.push_back("-");
  }
  if (with_queue) {
    head.push_back(std::to_string(state.waiters));
  }
  head.push_back(shared ? "(--shared)"
                        : "(--limit " + std::to_string(state.limit) + ")");
  std::vector<Row> rows{std::move(head)};
  for (const auto& holder : state.holders) {
    Row row{"  " + (shared ? "" : std::to_string(holder.slot) + " ")
                + printable(holder.token.substr(0, k_token_shown)),
            printable(holder.user + "@" + holder.host + ":"
                      + std::to_string(holder.pid)),
            held_text(now_ms, holder.acquired_ms),
            format_duration(from_milliseconds(holder.ttl_ms)),
            std::to_string(holder.fence)};
    if (with_servers) {
      row.push_back("-");
    }
    if (with_queue) {
      row.push_back("");
    }
    row.push_back(printable(holder.command));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string
pad(const std::string& text, std::size_t width) {
  const auto used = column_width(text);
  return text + std::string(width > used ? width - used : 0, ' ');
}

// Returns the widths of the columns but the last.
std::vector<std::size_t>
column_widths(const std::vector<Row>& rows) {
  std::vector<std::size_t> widths(rows.front().size() - 1, 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], column_width(row[i]));
    }
  }
  return widths;
}

// True when all columns but the last, plus 10 of the last, fit `width`.
bool
fits(const std::vector<Row>& rows, std::size_t width) {
  std::size_t used = 10;
  for (const auto w : column_widths(rows)) {
    used += w + 2;
  }
  return used <= width;
}

// Cuts column `column` of every row by what the table is too wide for
// `width`, down to k_min_cut.
void
narrow(std::vector<Row>& rows, std::size_t column, std::size_t width) {
  std::size_t used = 10;
  for (const auto w : column_widths(rows)) {
    used += w + 2;
  }
  const auto current = column_widths(rows)[column];
  const auto excess = used > width ? used - width : 0;
  const auto cut =
      std::max(k_min_cut, current > excess ? current - excess : std::size_t{0});
  for (auto& row : rows) {
    row[column] = truncate_middle(row[column], cut);
  }
}

// Lays the rows out in aligned columns; the last one is cut to fit `width`.
std::string
layout(const std::vector<Row>& rows, std::size_t width) {
  const std::size_t columns = rows.front().size();
  const auto widths = column_widths(rows);
  std::size_t used = 0;
  for (std::size_t i = 0; i + 1 < columns; ++i) {
    used += widths[i] + 2;
  }
  const std::size_t last_width = width > used + 10 ? width - used : 10;
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i + 1 < columns; ++i) {
      line += pad(row[i], widths[i] + 2);
    }
    line += truncate_columns(row.back(), last_width);
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    out += line + "\n";
  }
  return out;
}

std::string
plural(std::size_t count, const std::string& word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : "s");
}

// "1 replica, lag 0s", "2 replicas (1 online), lag up to 3s", "no replica".
std::string
replicas_summary(const std::vector<lock::ReplicaState>& replicas) {
  if (replicas.empty()) {
    return "no replica";
  }
  const auto online =
      std::count_if(replicas.begin(), replicas.end(), [](const auto& replica) {
        return replica.state == "online";
      });
  std::int64_t worst_lag = -1;
  for (const auto& replica : replicas) {
    worst_lag = std::max(worst_lag, replica.lag_s);
  }
  std::string text = plural(replicas.size(), "replica");
  if (static_cast<std::size_t>(online) != replicas.size()) {
    text += " (" + std::to_string(online) + " online)";
  }
  if (worst_lag >= 0) {
    text += std::string(replicas.size() == 1 ? ", lag " : ", lag up to ")
            + std::to_string(worst_lag) + "s";
  }
  return text;
}

// "127.0.0.1:7000: 5461 slots, 1 replica, lag 0s".
std::string
shard_summary(const lock::ClusterShardState& shard) {
  std::string text = shard.master + ": "
                     + plural(static_cast<std::size_t>(shard.slots), "slot");
  if (!shard.error.empty()) {
    return text + ", did not answer";
  }
  return text + ", " + replicas_summary(shard.replicas);
}

// "cluster: 3 masters, all 16384 slots served; 127.0.0.1:7000: 5461 slots,
// 1 replica, lag 0s; ...".
std::string
cluster_line(const lock::ClusterDeploymentState& state) {
  std::string line = "cluster: " + plural(state.shards.size(), "master") + ", ";
  if (state.uncovered_slots.empty()) {
    line += "all " + std::to_string(redis::k_cluster_slots) + " slots served";
  } else {
    line += "slots " + redis::format_slot_spans(state.uncovered_slots)
            + " served by no master";
  }
  for (const auto& shard : state.shards) {
    line += "; " + shard_summary(shard);
  }
  return printable(line) + "\n";
}

// A quorum's lock, as each server has it.
nlohmann::ordered_json
nodes_json(const lock::LockState& state) {
  auto nodes = nlohmann::ordered_json::array();
  if (!state.quorum) {
    return nodes;
  }
  for (const auto& server : state.quorum->servers) {
    nlohmann::ordered_json node{{"node", server.server}, {"held", server.held}};
    node["token"] = server.held ? nlohmann::ordered_json(server.token)
                                : nlohmann::ordered_json(nullptr);
    node["ttl_ms"] = server.held && server.ttl_ms >= 0
                         ? nlohmann::ordered_json(server.ttl_ms)
                         : nlohmann::ordered_json(nullptr);
    node["fence"] = server.held ? nlohmann::ordered_json(server.fence)
                                : nlohmann::ordered_json(nullptr);
    if (!server.error.empty()) {
      node["error"] = server.error;
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

// "redlock: 5 servers, quorum 3, 4 reachable; down: 127.0.0.1:7003".
std::string
quorum_line(const lock::QuorumDeploymentState& state) {
  std::string down;
  std::size_t reachable = 0;
  for (const auto& server : state.servers) {
    if (server.error.empty()) {
      ++reachable;
    } else {
      down += (down.empty() ? "; down: " : ", ") + server.address;
    }
  }
  return printable("redlock: " + plural(state.servers.size(), "server")
                   + ", quorum " + std::to_string(state.quorum) + ", "
                   + std::to_string(reachable) + " reachable" + down)
         + "\n";
}

// A semaphore's holders, by slot.
nlohmann::ordered_json
holders_json(const lock::LockState& state) {
  auto holders = nlohmann::ordered_json::array();
  for (const auto& holder : state.holders) {
    nlohmann::ordered_json entry;
    if (state.limit != lock::k_shared_limit) {
      entry["slot"] = holder.slot;
    }
    entry.update(nlohmann::ordered_json{
        {"token", holder.token},
        {"ttl_ms", holder.ttl_ms},
        {"fence", holder.fence},
        {"owner",
         {{"host", holder.host}, {"pid", holder.pid}, {"user", holder.user}}},
        {"command", holder.command},
        {"acquired_at", format_iso8601_utc(holder.acquired_ms)},
        {"renewals", holder.renewals}});
    holders.push_back(std::move(entry));
  }
  return holders;
}

} // namespace

std::string
format_status_table(const lock::StatusSnapshot& snapshot, std::size_t width) {
  const bool with_queue =
      std::any_of(snapshot.locks.begin(),
                  snapshot.locks.end(),
                  [](const auto& state) { return state.waiters > 0; });
  const bool with_servers = snapshot.quorum > 0;
  std::vector<Row> rows{{"NAME", "HOLDER", "HELD FOR", "TTL", "FENCE"}};
  if (with_servers) {
    rows.front().push_back("SERVERS");
  }
  if (with_queue) {
    rows.front().push_back("QUEUE");
  }
  rows.front().push_back("COMMAND");
  for (const auto& state : snapshot.locks) {
    if (state.held && state.limit != 0) {
      for (auto& row : semaphore_rows(
               state, snapshot.server_now_ms, with_servers, with_queue)) {
        rows.push_back(std::move(row));
      }
      continue;
    }
    rows.push_back(
        row_of(state, snapshot.server_now_ms, with_servers, with_queue));
  }
  if (!fits(rows, width)) {
    for (auto& row : rows) {
      row[0] = truncate_middle(row[0], k_name_cut);
      row[1] = truncate_middle(row[1], k_holder_cut);
    }
  }
  for (const std::size_t column : {0, 1}) {
    if (!fits(rows, width)) {
      narrow(rows, column, width);
    }
  }
  return layout(rows, width);
}

std::string
format_status_json(const lock::StatusSnapshot& snapshot,
                   const std::string& node,
                   std::optional<std::int64_t> held_back_ms) {
  auto locks = nlohmann::ordered_json::array();
  for (const auto& state : snapshot.locks) {
    nlohmann::ordered_json entry{
        {"name", state.name}, {"key", state.key}, {"held", state.held}};
    const bool several_holders = state.held && state.limit != 0;
    if (several_holders) {
      // One holder's fields would hide the others': they are in `holders`.
      entry["ttl_ms"] = state.ttl_ms;
      for (const char* field :
           {"token", "fence", "owner", "command", "acquired_at", "renewals"}) {
        entry[field] = nullptr;
      }
      if (state.limit == lock::k_shared_limit) {
        entry["shared"] = true;
      } else {
        entry["limit"] = state.limit;
      }
      entry["holders"] = holders_json(state);
    } else if (state.held) {
      entry["ttl_ms"] = state.ttl_ms < 0 ? nlohmann::ordered_json(nullptr)
                                         : nlohmann::ordered_json(state.ttl_ms);
      // An application's lock (--compat) records no fence, start or owner
      // beyond what its value tells: null, not a made-up 0 or 1970.
      const auto known = [](auto value, bool is_known) {
        return is_known ? nlohmann::ordered_json(value)
                        : nlohmann::ordered_json(nullptr);
      };
      entry["token"] = state.token;
      entry["fence"] = known(state.fence, state.fence > 0);
      entry["owner"] = {{"host", known(state.host, !state.host.empty())},
                        {"pid", known(state.pid, state.pid > 0)},
                        {"user", known(state.user, !state.user.empty())}};
      entry["command"] = state.command;
      entry["acquired_at"] =
          known(format_iso8601_utc(state.acquired_ms), state.acquired_ms > 0);
      entry["renewals"] = state.renewals;
    } else {
      for (const char* field : {"ttl_ms",
                                "token",
                                "fence",
                                "owner",
                                "command",
                                "acquired_at",
                                "renewals"}) {
        entry[field] = nullptr;
      }
    }
    // A queue can form behind a lock that just turned free, too.
    entry["waiters"] = state.waiters;
    if (state.cluster || !node.empty()) {
      entry["node"] = state.cluster ? state.cluster->node : node;
    }
    if (state.cluster && state.cluster->slot >= 0) {
      entry["slot"] = state.cluster->slot;
    }
    if (snapshot.quorum > 0) {
      entry["quorum"] = state.quorum && state.quorum->agreed;
      entry["nodes"] = nodes_json(state);
    }
    if (held_back_ms) {
      entry["held_back_ms"] = *held_back_ms;
    }
    locks.push_back(std::move(entry));
  }
  // Replace invalid UTF-8 rather than throw: names and commands are bytes.
  return locks.dump(
             2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
         + "\n";
}

std::string
format_topology_line(const lock::DeploymentState& deployment) {
  if (const auto* cluster =
          std::get_if<lock::ClusterDeploymentState>(&deployment)) {
    return cluster_line(*cluster);
  }
  if (const auto* quorum =
          std::get_if<lock::QuorumDeploymentState>(&deployment)) {
    return quorum_line(*quorum);
  }
  const auto& state = std::get<lock::SentinelDeploymentState>(deployment);
  const auto agreeing = std::count_if(
      state.sentinels.begin(),
      state.sentinels.end(),
      [&](const auto& sentinel) { return sentinel.master == state.master; });
  std::string line = "sentinel: master " + quote(state.master_name) + " "
                     + state.master + " (" + std::to_string(agreeing) + " of "
                     + std::to_string(state.sentinels.size())
                     + " sentinels agree); ";
  if (state.replicas.empty()) {
    return line + "no replicas\n";
  }
  line += "replicas";
  for (std::size_t i = 0; i < state.replicas.size(); ++i) {
    const auto& replica = state.replicas[i];
    line += (i == 0 ? " " : ", ") + replica.address + " " + replica.state;
    if (replica.lag_s >= 0) {
      line += " lag " + std::to_string(replica.lag_s) + "s";
    }
  }
  return line + "\n";
}

} // namespace rlock::cli
