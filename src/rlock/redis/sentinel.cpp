#include <rlock/redis/failure.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/sentinel.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>

namespace rlock::redis {

namespace {

// One sentinel's answer: the master's address, or why there is none.
struct Answer {
  std::optional<Endpoint> master;
  std::string why;       // when there is no address
  bool answered = false; // the sentinel replied (knows nothing, or errs)
  std::optional<FailureKind> failure; // why it did not reply
};

Answer
ask(const Endpoint& sentinel,
    const std::string& name,
    const Endpoint& data_node,
    const ConnectOptions& options) {
  Answer answer;
  try {
    auto connection = Connection::open(sentinel, options);
    const auto reply =
        connection.command({"SENTINEL", "get-master-addr-by-name", name});
    if (reply.is_error()) {
      const auto code = server_code_of(reply.text);
      if (code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM") {
        // A login the sentinel wants: no answer, and none by waiting.
        answer.why = "sentinel " + sentinel.address()
                     + " refused: " + printable(reply.text);
        answer.failure = FailureKind::auth_refused;
        return answer;
      }
      answer.answered = true;
      answer.why = is_unknown_command(reply.text)
                       ? "is not a sentinel (a Redis server? name it in a "
                         "redis:// URL): "
                             + printable(reply.text)
                       : printable(reply.text);
      return answer;
    }
    answer.answered = true;
    if (!reply.is_array() || reply.elements.size() != 2) {
      answer.why = "does not know master " + quote(name);
      return answer;
    }
    const auto& port_text = reply.elements[1].text;
    int port = 0;
    const auto* end = port_text.data() + port_text.size();
    if (std::from_chars(port_text.data(), end, port).ptr != end || port <= 0
        || port > 65535) {
      answer.why = "named port " + quote(port_text);
      return answer;
    }
    Endpoint master = data_node;
    master.host = reply.elements[0].text;
    master.port = port;
    master.socket_path.clear();
    answer.master = master;
  } catch (const Failure& e) {
    answer.why = e.what();
    answer.failure = e.failure_kind();
  }
  return answer;
}

} // namespace

namespace {

// A sentinel that is slow to answer is skipped for the next one.
ConnectOptions
sentinel_options(const ConnectOptions& options) {
  constexpr Duration k_longest = std::chrono::seconds(1);
  ConnectOptions bounded = options;
  bounded.connect_timeout = std::min(options.connect_timeout, k_longest);
  bounded.io_timeout = std::min(options.io_timeout, k_longest);
  return bounded;
}

} // namespace

Endpoint
locate_master(SentinelMaster& master, const ConnectOptions& options) {
  std::vector<std::string> reasons;
  bool any_answered = false;
  bool all_timed_out = true;
  // A refusal that will not pass (a wrong password, TLS) outweighs the rest.
  std::optional<FailureKind> lasting;
  std::string lasting_why;
  for (auto it = master.sentinels.begin(); it != master.sentinels.end(); ++it) {
    auto answer =
        ask(*it, master.name, master.data_node, sentinel_options(options));
    if (answer.master) {
      for (const auto& reason : reasons) {
        log::info(reason + "; asked the next sentinel");
      }
      std::rotate(master.sentinels.begin(), it, it + 1);
      return *answer.master;
    }
    any_answered = any_answered || answer.answered;
    all_timed_out = all_timed_out && answer.failure == FailureKind::timed_out;
    if (answer.failure && !may_pass(Failure(*answer.failure, answer.why))) {
      lasting = answer.failure;
      lasting_why = answer.why;
    }
    reasons.push_back(answer.answered
                          ? "sentinel " + it->address() + " " + answer.why
                          : answer.why);
  }
  std::string joined;
  for (const auto& reason : reasons) {
    joined += (joined.empty() ? "" : "; ") + reason;
  }
  if (lasting == FailureKind::auth_refused) {
    throw Failure(*lasting,
                  "the sentinels refused the login (" + lasting_why + ")");
  }
  if (lasting) {
    throw Failure(*lasting, "no sentinel could be used: " + lasting_why);
  }
  if (any_answered) {
    throw Failure(FailureKind::unexpected_reply,
                  "no sentinel names a master " + quote(master.name) + ": "
                      + joined);
  }
  throw Failure(all_timed_out ? FailureKind::timed_out : FailureKind::refused,
                "no sentinel answered (" + joined + ")");
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
