#include <rlock/lock/server_facts.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/integer.hpp>

#include <array>
#include <cstdlib>
#include <limits>
#include <thread>

namespace rlock::lock {

namespace {

constexpr int k_pings = 5;

// Between the two TIME samples of the clock rate: long enough that a 1% rate
// stands well clear of a loopback or LAN round trip.
constexpr Duration k_rate_interval = std::chrono::milliseconds(250);

// The CONFIG parameters the checks judge.
constexpr std::array<const char*, 6> k_parameters{"maxmemory-policy",
                                                  "maxmemory",
                                                  "appendonly",
                                                  "appendfsync",
                                                  "save",
                                                  "min-replicas-to-write"};

std::string
error_of(const redis::Reply& reply) {
  return reply.text;
}

// Reads the CONFIG parameters; stops at the first refusal (ACL, a managed
// Redis with CONFIG renamed), since the others would be refused alike.
void
read_config(redis::Connection& connection, ServerFacts& facts) {
  for (const char* parameter : k_parameters) {
    const auto reply = connection.command({"CONFIG", "GET", parameter});
    if (reply.is_error()) {
      facts.config_error = error_of(reply);
      return;
    }
    if (reply.is_array() && reply.elements.size() == 2
        && reply.elements[1].is_string()) {
      facts.config[parameter] = reply.elements[1].text;
    }
  }
}

void
read_info(redis::Connection& connection, ServerFacts& facts) {
  for (const char* section :
       {"server", "memory", "persistence", "replication"}) {
    const auto reply = connection.command({"INFO", section});
    if (reply.is_error()) {
      facts.info_error = error_of(reply);
      continue;
    }
    if (reply.is_string()) {
      facts.info.merge(parse_info(reply.text));
    }
  }
}

// Fields of a flat key-value array reply (HELLO 2).
std::string
field_of(const redis::Reply& reply, std::string_view key) {
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    const auto& name = reply.elements[i];
    const auto& value = reply.elements[i + 1];
    if (name.is_string() && name.text == key && value.is_string()) {
      return value.text;
    }
  }
  return {};
}

// The version from INFO, else from HELLO (Redis 6 and later, where an ACL may
// refuse INFO but not HELLO).
void
read_version(redis::Connection& connection, ServerFacts& facts) {
  if (const auto found = facts.info.find("redis_version");
      found != facts.info.end()) {
    facts.version = found->second;
    const auto identity = identify_server(facts.info);
    facts.server_name = identity.name;
    facts.server_version = identity.version;
    return;
  }
  // HELLO says the server's name and its own version (Valkey: "valkey",
  // "8.0.1"), not the Redis version it is compatible with.
  const auto reply = connection.command({"HELLO", "2"});
  if (reply.is_array()) {
    facts.server_name = field_of(reply, "server");
    facts.server_version = field_of(reply, "version");
    if (facts.server_name.empty() || facts.server_name == "redis") {
      facts.version = facts.server_version;
    }
  }
}

// The role from ROLE when INFO replication was refused.
void
read_role(redis::Connection& connection, ServerFacts& facts) {
  if (facts.info.contains("role")) {
    return;
  }
  const auto reply = connection.command({"ROLE"});
  if (!reply.is_array() || reply.elements.empty()
      || !reply.elements[0].is_string()) {
    return;
  }
  const std::string role = reply.elements[0].text;
  facts.info["role"] = role;
  if (role == "master" && reply.elements.size() >= 3
      && reply.elements[2].is_array()) {
    facts.info["connected_slaves"] =
        std::to_string(reply.elements[2].elements.size());
  }
}

void
probe_script(redis::Connection& connection, ServerFacts& facts) {
  const auto reply = connection.command({"EVAL", "return 1", "0"});
  if (reply.is_error()) {
    facts.script_error = error_of(reply);
  }
}

void
measure_round_trips(redis::Connection& connection, ServerFacts& facts) {
  for (int i = 0; i < k_pings; ++i) {
    const auto sent = boot_now();
    const auto reply = connection.command({"PING"});
    const auto took = boot_now() - sent;
    if (!reply.is_error()) {
      facts.round_trips.push_back(took);
    }
  }
}

// How long the WAIT probe waits for the replicas at most.
constexpr auto k_wait_probe_bound = std::chrono::seconds(1);

// Times a WAIT for every connected replica, as an acquire with --replicas
// pays it (bounded by k_wait_probe_bound).
void
probe_wait(redis::Connection& connection,
           ServerFacts& facts,
           const std::string& channel) {
  const auto found = facts.info.find("connected_slaves");
  const int replicas =
      found == facts.info.end() ? 0 : std::atoi(found->second.c_str());
  if (replicas <= 0) {
    return;
  }
  // Something to confirm first: a PUBLISH reaches the replicas through
  // the replication stream, as a lock write does, and changes no key.
  const auto sent = boot_now();
  connection.append({"PUBLISH", channel, "1"});
  connection.append(
      {"WAIT",
       std::to_string(replicas),
       std::to_string(std::chrono::milliseconds(k_wait_probe_bound).count())});
  (void)connection.read_reply();
  const auto reply = connection.read_reply();
  if (reply.type == redis::Reply::Type::integer) {
    facts.wait_probe =
        WaitProbe{replicas, static_cast<int>(reply.integer), boot_now() - sent};
  }
}

// The integer in a bulk string reply ("1700000000"), or nothing.
std::optional<std::int64_t>
integer_in(const redis::Reply& reply) {
  if (!reply.is_string()) {
    return std::nullopt;
  }
  return parse_integer(reply.text);
}

// One TIME: the server's clock in microseconds since the epoch, and when it
// was asked and answered here.
struct TimeSample {
  std::int64_t server_us = 0;
  BootTime sent{};
  BootTime received{};
  std::int64_t sent_ms = 0; // wall clock here
  std::int64_t received_ms = 0;
};

// Asks TIME; returns why it failed, or "" with `sample` filled.
std::string
sample_time(redis::Connection& connection, TimeSample& sample) {
  sample.sent = boot_now();
  sample.sent_ms = wall_now_ms();
  const auto reply = connection.command({"TIME"});
  sample.received_ms = wall_now_ms();
  sample.received = boot_now();
  if (reply.is_error()) {
    return error_of(reply);
  }
  const auto seconds = reply.is_array() && reply.elements.size() == 2
                           ? integer_in(reply.elements[0])
                           : std::nullopt;
  const auto micros = seconds ? integer_in(reply.elements[1]) : std::nullopt;
  // A broken server's numbers must not overflow.
  if (!micros || __builtin_mul_overflow(*seconds, 1'000'000, &sample.server_us)
      || __builtin_add_overflow(sample.server_us, *micros, &sample.server_us)) {
    return "unexpected reply";
  }
  return {};
}

// The server's TIME against the local clock at the middle of the round trip.
void
measure_clock(redis::Connection& connection,
              ServerFacts& facts,
              TimeSample& sample) {
  const auto error = sample_time(connection, sample);
  facts.clock_uncertainty = (sample.received - sample.sent) / 2;
  if (!error.empty()) {
    facts.time_error = error;
    return;
  }
  const std::int64_t server_ms = sample.server_us / 1000;
  std::int64_t offset = 0;
  // ... nor make llabs undefined.
  if (__builtin_sub_overflow(server_ms,
                             sample.sent_ms
                                 + (sample.received_ms - sample.sent_ms) / 2,
                             &offset)
      || offset == std::numeric_limits<std::int64_t>::min()) {
    facts.time_error = "unexpected reply";
    return;
  }
  facts.server_time_ms = server_ms;
  facts.clock_offset_ms = offset;
}

BootTime
middle(const TimeSample& sample) {
  return sample.sent + (sample.received - sample.sent) / 2;
}

// A second TIME k_rate_interval after `first`: how far the server's clock
// moved while CLOCK_BOOTTIME moved by so much here.
void
measure_clock_rate(redis::Connection& connection,
                   ServerFacts& facts,
                   const TimeSample& first) {
  if (!facts.clock_offset_ms) {
    return;
  }
  const auto wait = first.sent + k_rate_interval - boot_now();
  if (wait > Duration::zero()) {
    std::this_thread::sleep_for(wait);
  }
  TimeSample second;
  std::int64_t moved_us = 0;
  // A clock stepped by more than an hour (or a broken reply) is no rate.
  constexpr std::int64_t k_hour_us = 3'600'000'000;
  if (!sample_time(connection, second).empty()
      || __builtin_sub_overflow(second.server_us, first.server_us, &moved_us)
      || moved_us > k_hour_us || moved_us < -k_hour_us) {
    return;
  }
  facts.clock_rate = ClockRate{
      middle(second) - middle(first),
      std::chrono::microseconds(moved_us),
      (first.received - first.sent + second.received - second.sent) / 2};
}

} // namespace

Fields
parse_info(std::string_view text) {
  Fields fields;
  while (!text.empty()) {
    const auto end = text.find('\n');
    auto line = text.substr(0, end);
    text = end == std::string_view::npos ? "" : text.substr(end + 1);
    if (line.ends_with('\r')) {
      line.remove_suffix(1);
    }
    const auto colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string_view::npos) {
      continue;
    }
    fields.insert_or_assign(std::string(line.substr(0, colon)),
                            std::string(line.substr(colon + 1)));
  }
  return fields;
}

namespace {

// Returns the value of `key` in "ip=1.2.3.4,port=6380,state=online,...".
std::string
field_of(std::string_view list, std::string_view key) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto item = list.substr(0, comma);
    list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
    if (item.size() > key.size() && item.starts_with(key)
        && item[key.size()] == '=') {
      return std::string(item.substr(key.size() + 1));
    }
  }
  return {};
}

} // namespace

ServerIdentity
identify_server(const Fields& info) {
  const auto text = [&info](const std::string& name) {
    const auto found = info.find(name);
    return found == info.end() ? std::string() : found->second;
  };
  ServerIdentity identity{text("server_name"), {}};
  if (!identity.name.empty()) {
    identity.version = text(identity.name + "_version");
  }
  if (identity.version.empty()) {
    identity.version = text("redis_version");
  }
  if (identity.name.empty() && !identity.version.empty()) {
    identity.name = "redis";
  }
  return identity;
}

std::string
server_label(const ServerIdentity& identity) {
  if (identity.name.empty()) {
    return "the server";
  }
  std::string label = identity.name;
  if (label[0] >= 'a' && label[0] <= 'z') {
    label[0] = static_cast<char>(label[0] - 'a' + 'A');
  }
  return identity.version.empty() ? label : label + " " + identity.version;
}

std::vector<ReplicaState>
replicas_of(const Fields& info) {
  std::vector<ReplicaState> replicas;
  for (int i = 0;; ++i) {
    const auto found = info.find("slave" + std::to_string(i));
    if (found == info.end()) {
      return replicas;
    }
    const auto& list = found->second;
    ReplicaState replica;
    replica.address = redis::HostPort{field_of(list, "ip"),
                                      std::atoi(field_of(list, "port").c_str())}
                          .address();
    replica.state = field_of(list, "state");
    const auto lag = field_of(list, "lag");
    replica.lag_s = lag.empty() ? -1 : std::atoll(lag.c_str());
    replicas.push_back(std::move(replica));
  }
}

ServerFacts
examine_server(redis::Connection& connection,
               const std::string& probe_channel) {
  ServerFacts facts;
  facts.address = connection.address();
  measure_round_trips(connection, facts);
  read_info(connection, facts);
  read_config(connection, facts);
  read_version(connection, facts);
  read_role(connection, facts);
  probe_script(connection, facts);
  TimeSample time;
  measure_clock(connection, facts, time);
  probe_wait(connection, facts, probe_channel);
  measure_clock_rate(connection, facts, time);
  return facts;
}

ClusterShardState
describe_cluster_node(redis::Connection& connection) {
  ClusterShardState shard;
  shard.master = connection.address();
  const auto replication = connection.command({"INFO", "replication"});
  if (replication.is_string()) {
    shard.replicas = replicas_of(parse_info(replication.text));
  }
  const auto info = connection.command({"CLUSTER", "INFO"});
  if (info.is_string()) {
    for (auto& [key, value] : parse_info(info.text)) {
      shard.cluster_info.emplace(key, std::move(value));
    }
  }
  const auto timeout =
      connection.command({"CONFIG", "GET", "cluster-node-timeout"});
  if (timeout.is_array() && timeout.elements.size() == 2
      && timeout.elements[1].is_string()) {
    shard.node_timeout_ms = std::atoll(timeout.elements[1].text.c_str());
  }
  return shard;
}

} // namespace rlock::lock
