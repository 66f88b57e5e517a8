#include <rlock/redis/failure.hpp>
#include <rlock/redis/fanout.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace rlock::redis {

namespace {

// A sentinel that is slow to answer is not waited for long.
ConnectOptions
sentinel_options(const ConnectOptions& options) {
  constexpr Duration k_longest = std::chrono::seconds(1);
  ConnectOptions bounded = options;
  bounded.connect_timeout = std::min(options.connect_timeout, k_longest);
  bounded.io_timeout = std::min(options.io_timeout, k_longest);
  return bounded;
}

// Returns a flat [key, value, ...] array reply as a map.
std::map<std::string, std::string>
fields_of(const Reply& reply) {
  std::map<std::string, std::string> fields;
  if (!reply.is_array()) {
    return fields;
  }
  for (std::size_t i = 0; i + 1 < reply.elements.size(); i += 2) {
    fields[reply.elements[i].text] = reply.elements[i + 1].text;
  }
  return fields;
}

bool
has_flag(const std::string& flags, std::string_view flag) {
  std::size_t start = 0;
  while (start <= flags.size()) {
    auto end = flags.find(',', start);
    if (end == std::string::npos) {
      end = flags.size();
    }
    if (std::string_view(flags).substr(start, end - start) == flag) {
      return true;
    }
    start = end + 1;
  }
  return false;
}

std::size_t
majority_of(std::size_t configured) {
  return configured / 2 + 1;
}

// The views that name a master: the sentinels that answered.
std::size_t
naming(const std::vector<SentinelView>& views) {
  return static_cast<std::size_t>(
      std::count_if(views.begin(), views.end(), [](const SentinelView& view) {
        return view.master.has_value();
      }));
}

// "127.0.0.1:26379 names 127.0.0.1:7001, 127.0.0.1:26380 names ...".
std::string
what_each_names(const std::vector<SentinelView>& views) {
  std::string text;
  for (const auto& view : views) {
    text +=
        (text.empty() ? "" : ", ") + view.sentinel
        + (view.master ? " names " + view.master->address() : ": " + view.why);
  }
  return text;
}

// The address most of `views` name, and how many name it.
std::pair<std::string, std::size_t>
most_named(const std::vector<SentinelView>& views) {
  std::map<std::string, std::size_t> votes;
  for (const auto& view : views) {
    if (view.master) {
      ++votes[view.master->address()];
    }
  }
  std::pair<std::string, std::size_t> best{"", 0};
  for (const auto& [address, count] : votes) {
    if (count > best.second) {
      best = {address, count};
    }
  }
  return best;
}

// A sentinel that names another master than `address` at a newer config
// epoch than any that names `address`: it saw a failover the others have
// not heard of yet.
const SentinelView*
newer_dissent(const std::vector<SentinelView>& views,
              const std::string& address) {
  std::int64_t epoch = -1;
  for (const auto& view : views) {
    if (view.master && view.master->address() == address) {
      epoch = std::max(epoch, view.config_epoch);
    }
  }
  for (const auto& view : views) {
    if (view.master && view.master->address() != address
        && view.config_epoch > epoch) {
      return &view;
    }
  }
  return nullptr;
}

// Throws the failure of a majority that did not answer: a lasting refusal
// (a login, TLS) first, then refused, or timed_out when each that did not
// answer timed out.
[[noreturn]] void
throw_too_few(const std::vector<SentinelView>& views,
              std::size_t configured,
              const std::string& name) {
  std::optional<FailureKind> lasting;
  std::string lasting_why;
  bool any_answered = false;
  bool any_failed = false;
  bool all_timed_out = true;
  for (const auto& view : views) {
    if (!view.failure) {
      any_answered = true;
      continue;
    }
    any_failed = true;
    all_timed_out = all_timed_out && view.failure == FailureKind::timed_out;
    if (!may_pass(Failure(*view.failure, view.why))) {
      lasting = view.failure;
      lasting_why = view.why;
    }
  }
  if (lasting == FailureKind::auth_refused) {
    throw Failure(*lasting,
                  "the sentinels refused the login (" + lasting_why + ")");
  }
  if (lasting) {
    throw Failure(*lasting, "no sentinel could be used: " + lasting_why);
  }
  const auto named = naming(views);
  const auto kind = any_failed && all_timed_out ? FailureKind::timed_out
                                                : FailureKind::refused;
  if (named == 0 && any_answered) {
    throw Failure(FailureKind::unexpected_reply,
                  "no sentinel names a master " + quote(name) + ": "
                      + what_each_names(views));
  }
  if (named == 0) {
    throw Failure(kind,
                  "no sentinel answered (" + what_each_names(views) + ")");
  }
  throw Failure(kind,
                "only " + std::to_string(named) + " of "
                    + std::to_string(configured) + " sentinels named master "
                    + quote(name) + ", a majority must ("
                    + what_each_names(views) + ")");
}

} // namespace

SentinelView
view_of(const std::string& sentinel,
        const std::string& name,
        const Reply& where,
        const Reply& settings) {
  SentinelView view;
  view.sentinel = sentinel;
  if (where.is_error()) {
    const auto code = server_code_of(where.text);
    if (code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM") {
      // A login the sentinel wants: no answer, and none by waiting.
      view.why = "sentinel " + sentinel + " refused: " + printable(where.text);
      view.failure = FailureKind::auth_refused;
      return view;
    }
    view.why = is_unknown_command(where.text)
                   ? "is not a sentinel (a Redis server? name it in a "
                     "redis:// URL): "
                         + printable(where.text)
                   : printable(where.text);
    return view;
  }
  if (!where.is_array() || where.elements.size() != 2) {
    view.why = "does not know master " + quote(name);
    return view;
  }
  const auto& port_text = where.elements[1].text;
  const auto port = parse_integer(port_text, 1, 65535);
  if (!port) {
    view.why = "named port " + quote(port_text);
    return view;
  }
  view.master = HostPort{where.elements[0].text, static_cast<int>(*port)};
  const auto fields = fields_of(settings);
  if (const auto flags = fields.find("flags"); flags != fields.end()) {
    // Once the replica to promote answers as master, the sentinel leading
    // the failover names it (get-master-addr-by-name) while SENTINEL MASTER
    // still gives the old address until the other replicas have resynced:
    // past that point the failover has chosen its master.
    const auto ip = fields.find("ip");
    const auto port_field = fields.find("port");
    const bool promoted =
        ip != fields.end() && port_field != fields.end()
        && (ip->second != view.master->host || port_field->second != port_text);
    view.failover_in_progress =
        has_flag(flags->second, "failover_in_progress") && !promoted;
    view.down = has_flag(flags->second, "o_down");
  }
  if (const auto epoch = fields.find("config-epoch"); epoch != fields.end()) {
    view.config_epoch = parse_integer(epoch->second).value_or(-1);
  }
  return view;
}

std::vector<SentinelView>
ask_sentinels(const SentinelMaster& master, const ConnectOptions& options) {
  const auto bounded = sentinel_options(options);
  const BootTime deadline = boot_now() + bounded.io_timeout;
  const std::size_t count = master.sentinels.size();
  std::vector<SentinelView> views(count);
  std::vector<std::optional<Connection>> connections(count);
  std::vector<Exchange> exchanges;
  std::vector<std::size_t> asked;
  // Connections are made in turn (a refused one fails at once), each
  // bounded; the questions then go to all before any reply is read.
  for (std::size_t i = 0; i < count; ++i) {
    const auto& sentinel = master.sentinels[i];
    views[i].sentinel = sentinel.address();
    try {
      auto one = bounded;
      one.connect_timeout =
          std::min(bounded.connect_timeout, deadline - boot_now());
      if (one.connect_timeout <= Duration::zero()) {
        throw Failure(FailureKind::timed_out,
                      "sentinel " + sentinel.address() + " not asked in time");
      }
      connections[i].emplace(Connection::open(sentinel, one));
      exchanges.push_back(
          Exchange{&*connections[i],
                   {{"SENTINEL", "get-master-addr-by-name", master.name},
                    {"SENTINEL", "MASTER", master.name}},
                   {},
                   std::nullopt});
      asked.push_back(i);
    } catch (const Failure& e) {
      views[i].why = e.what();
      views[i].failure = e.failure_kind();
    }
  }
  exchange_all(exchanges, deadline);
  for (std::size_t j = 0; j < exchanges.size(); ++j) {
    auto& view = views[asked[j]];
    const auto& exchange = exchanges[j];
    if (exchange.failure) {
      view.why = exchange.failure->what();
      view.failure = exchange.failure->failure_kind();
      continue;
    }
    view = view_of(
        view.sentinel, master.name, exchange.replies[0], exchange.replies[1]);
  }
  return views;
}

HostPort
majority_master(const std::vector<SentinelView>& views,
                std::size_t configured,
                const std::string& name) {
  if (naming(views) < majority_of(configured)) {
    throw_too_few(views, configured, name);
  }
  const auto [address, votes] = most_named(views);
  if (votes < majority_of(configured)) {
    throw Failure(FailureKind::not_master,
                  "the sentinels do not agree on the master " + quote(name)
                      + " (" + what_each_names(views)
                      + "): a failover under way?");
  }
  if (const auto* newer = newer_dissent(views, address)) {
    throw Failure(FailureKind::not_master,
                  "sentinel " + newer->sentinel + " names "
                      + newer->master->address() + " as the master "
                      + quote(name) + " at a newer config epoch than " + address
                      + ": a failover under way");
  }
  for (const auto& view : views) {
    if (view.master && view.master->address() == address) {
      return *view.master;
    }
  }
  return {};
}

MasterStanding
standing_of(const std::vector<SentinelView>& views,
            std::size_t configured,
            const std::string& address,
            const std::string& name) {
  MasterStanding standing;
  const auto named = naming(views);
  if (named < majority_of(configured)) {
    standing.why = "only " + std::to_string(named) + " of "
                   + std::to_string(configured)
                   + " sentinels answered, a majority must ("
                   + what_each_names(views) + ")";
    return standing;
  }
  // The flags are those of the master the sentinel names: a failover that
  // has not promoted a replica yet (a write on the old master is lost with
  // the promotion), or a master held down.
  for (const auto& view : views) {
    if (!view.master || view.master->address() != address) {
      continue;
    }
    if (view.failover_in_progress) {
      standing.why = "sentinel " + view.sentinel + " reports a failover of "
                     + quote(name) + " under way";
      return standing;
    }
    if (view.down) {
      standing.why = "sentinel " + view.sentinel + " holds master "
                     + quote(name) + " down (o_down): a failover is due";
      return standing;
    }
  }
  const auto [best, votes] = most_named(views);
  if (votes == named && best == address) {
    standing.kind = MasterStanding::Kind::current;
    return standing;
  }
  if (votes >= majority_of(configured) && best != address
      && newer_dissent(views, best) == nullptr) {
    standing.kind = MasterStanding::Kind::elsewhere;
    for (const auto& view : views) {
      if (view.master && view.master->address() == best) {
        standing.named = view.master;
      }
    }
    standing.why = "the sentinels now name " + best + " as the master "
                   + quote(name) + ", not " + address;
    return standing;
  }
  standing.why = "the sentinels do not all name " + address + " as the master "
                 + quote(name) + " (" + what_each_names(views) + ")";
  return standing;
}

Endpoint
locate_master(SentinelMaster& master, const ConnectOptions& options) {
  const auto views = ask_sentinels(master, options);
  const auto named =
      majority_master(views, master.sentinels.size(), master.name);
  for (const auto& view : views) {
    if (!view.master && !view.why.empty()) {
      log::info("sentinel " + view.sentinel + ": " + view.why);
    }
  }
  Endpoint endpoint = master.data_node;
  endpoint.host = named.host;
  endpoint.port = named.port;
  endpoint.socket_path.clear();
  return endpoint;
}

Role
check_master_role(Connection& connection) {
  auto answer = role_of(connection);
  const auto& role = answer.name;
  if (role != "master") {
    throw Failure(FailureKind::not_master,
                  "the sentinels name " + connection.address()
                      + " as the master, but it is a " + printable(role)
                      + " (a failover under way?)");
  }
  return answer;
}

Connection
open_master(SentinelMaster& master, const ConnectOptions& options, Role* role) {
  const auto endpoint = locate_master(master, options);
  try {
    auto connection = Connection::open(endpoint, options);
    const auto answer = check_master_role(connection);
    if (role != nullptr) {
      *role = answer;
    }
    return connection;
  } catch (const Failure& e) {
    // The sentinels answered: a master they name that does not is one
    // they have not failed over yet.
    const auto kind = e.failure_kind();
    if (kind == FailureKind::refused || kind == FailureKind::timed_out
        || kind == FailureKind::closed) {
      throw Failure(FailureKind::not_master,
                    std::string(e.what())
                        + " (the master the sentinels name; "
                          "a failover under way?)");
    }
    throw;
  }
}

void
check_still_master(SentinelMaster& master,
                   const Connection& connection,
                   const ConnectOptions& options) {
  const auto named = locate_master(master, options).address();
  if (named != connection.address()) {
    throw Failure(FailureKind::not_master,
                  "the sentinels now name " + named + " as the master, not "
                      + connection.address());
  }
}

namespace {

SentinelReport
report_of(const Endpoint& sentinel,
          const std::string& name,
          const ConnectOptions& options) {
  SentinelReport report;
  report.address = sentinel.address();
  try {
    auto connection = Connection::open(sentinel, options);
    const auto where =
        connection.command({"SENTINEL", "get-master-addr-by-name", name});
    if (where.is_array() && where.elements.size() == 2) {
      report.master = HostPort{where.elements[0].text,
                               std::atoi(where.elements[1].text.c_str())}
                          .address();
    }
    report.settings =
        fields_of(connection.command({"SENTINEL", "MASTER", name}));
    const auto quorum = connection.command({"SENTINEL", "CKQUORUM", name});
    report.quorum_check = printable(quorum.text);
  } catch (const Failure& e) {
    report.error = e.what();
  }
  return report;
}

} // namespace

std::vector<SentinelReport>
survey_sentinels(const SentinelMaster& master, const ConnectOptions& options) {
  std::vector<SentinelReport> reports;
  for (const auto& sentinel : master.sentinels) {
    reports.push_back(
        report_of(sentinel, master.name, sentinel_options(options)));
  }
  return reports;
}

std::string
sentinel_addresses(const SentinelMaster& master) {
  std::string addresses;
  for (const auto& sentinel : master.sentinels) {
    addresses += (addresses.empty() ? "" : ", ") + sentinel.address();
  }
  return addresses;
}

} // namespace rlock::redis
