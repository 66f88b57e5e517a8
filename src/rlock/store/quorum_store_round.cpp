// The quorum store's rounds: a step's script sent to every server at once
// (servers not connected dialled first, all at once), the replies read as
// they come, and who answered what; undoing an acquire and writing a fence
// back are rounds too.

#include <rlock/lock/quorum_counts.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/redis/fanout.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/quorum_store_parts.hpp>
#include <rlock/util/text.hpp>

namespace rlock::lock {

using namespace quorum_parts;

namespace {

std::string
info_field(const std::string& info, const std::string& field) {
  const auto fields = parse_info(info);
  const auto it = fields.find(field);
  return it == fields.end() ? std::string() : it->second;
}

// Why an INFO reply does not tell when the server started; nothing when it
// does.
std::optional<std::string>
start_unknown_why(const redis::Reply& info) {
  if (info.is_error()) {
    return "INFO refused: " + printable(info.text);
  }
  if (!info.is_string()) {
    return std::string("unexpected reply to INFO");
  }
  if (!uptime_of(info.text)) {
    return std::string("INFO has no uptime_in_seconds");
  }
  return std::nullopt;
}

} // namespace

std::optional<redis::Failure>
QuorumStore::note_server(Member& member,
                         redis::Connection& c,
                         const redis::Reply& info) {
  // A run_id unknown now is no longer the one the server had: it is told
  // apart from the one that granted the lock (quorum::restarted_since()).
  member.run_id = info.is_string() ? info_field(info.text, "run_id") : "";
  if (const auto why = start_unknown_why(info)) {
    return unknown_start_failure(c.address(), *why, m_deployment.restart_grace);
  }
  c.set_server_started(latest_start(*uptime_of(info.text), boot_now()));
  return std::nullopt;
}

void
QuorumStore::mark_down(Member& member, const redis::Failure& failure) {
  member.store->disconnect();
  ++member.failures;
  member.down_until = boot_now() + quorum::down_for(member.failures);
  member.last_failure = failure;
}

void
QuorumStore::mark_up(Member& member) {
  member.failures = 0;
  member.down_until.reset();
  member.last_failure.reset();
}

void
QuorumStore::open_members(std::vector<Answer>& answers,
                          Duration budget,
                          std::optional<redis::Enough> enough) {
  const BootTime now = boot_now();
  const BootTime until =
      m_deadline ? std::min(*m_deadline, now + budget) : now + budget;
  std::vector<redis::Dial> dials;
  std::vector<Answer*> dialled;
  for (auto& answer : answers) {
    auto& member = m_members[answer.member];
    if (member.store->idle_fd() >= 0) {
      continue;
    }
    if (member.down_until && now < *member.down_until) {
      answer.failure = member.last_failure;
      continue;
    }
    const auto& described =
        std::get<Quorum>(m_deployment.topology).members[answer.member].where;
    if (std::holds_alternative<Sentinel>(described)) {
      // The sentinels are asked where the master is, in turn: session().
      member.store->set_deadline(until);
      try {
        member.store->session();
      } catch (const redis::Failure& failure) {
        answer.failure = failure;
        mark_down(member, failure);
      }
      member.store->set_deadline(m_deadline);
      continue;
    }
    dials.push_back(redis::Dial{std::get<Single>(described).endpoint, {}, {}});
    dialled.push_back(&answer);
  }
  if (dials.empty()) {
    return;
  }
  auto options = m_deployment.connect;
  const Duration left = std::max(until - boot_now(), Duration(milliseconds(1)));
  options.connect_timeout = std::min(options.connect_timeout, left);
  options.io_timeout = std::min(options.io_timeout, left);
  redis::dial_all(dials, options, until, enough);
  for (std::size_t i = 0; i < dials.size(); ++i) {
    auto& member = m_members[dialled[i]->member];
    if (dials[i].connection) {
      member.store->adopt(std::move(*dials[i].connection));
    } else {
      const auto failure = dials[i].failure.value_or(
          redis::Failure(redis::FailureKind::refused,
                         "cannot connect to " + dials[i].endpoint.address()));
      dialled[i]->failure = failure;
      mark_down(member, failure);
    }
  }
}

std::vector<QuorumStore::Answer>
QuorumStore::round(const std::vector<std::size_t>& members,
                   const ScriptCall& call,
                   Duration per_server,
                   bool confirm,
                   bool by_source,
                   bool quorum_suffices) {
  std::vector<Answer> answers;
  for (const auto member : members) {
    answers.push_back(answer_for(member));
  }
  // The servers not connected are dialled at once; those that connect
  // late cost the others at most a per-server time (an acquire's).
  const auto connected =
      std::count_if(members.begin(), members.end(), [this](std::size_t member) {
        return m_members[member].store->idle_fd() >= 0;
      });
  const auto wanted = std::max<long>(m_quorum - connected, 0);
  open_members(
      answers,
      per_server,
      redis::Enough{static_cast<std::size_t>(wanted),
                    boot_now() + std::min(per_server, k_longest_per_server)});
  std::vector<redis::Exchange> exchanges;
  // Per exchange: its answer, and whether INFO leads and WAIT follows.
  struct Shape {
    std::size_t answer;
    bool info;
    int replicas;
  };
  std::vector<Shape> shapes;
  bool waits = false;
  for (std::size_t index = 0; index < answers.size(); ++index) {
    auto& answer = answers[index];
    if (answer.failure) {
      continue;
    }
    auto& store = *m_members[answer.member].store;
    try {
      auto& c = store.session();
      answer.address = c.address();
      redis::Exchange exchange;
      exchange.connection = &c;
      const bool info = !c.server_started().has_value();
      if (info) {
        exchange.commands.push_back({"INFO", "server"});
      }
      exchange.commands.push_back(call.command(by_source));
      const int replicas = confirm ? store.replicas_to_confirm(c) : 0;
      if (replicas > 0) {
        waits = true;
        exchange.commands.push_back(
            {"WAIT",
             std::to_string(replicas),
             std::to_string(std::max<std::int64_t>(to_ms(per_server), 1))});
      }
      answer.sent = true;
      shapes.push_back(Shape{index, info, replicas});
      exchanges.push_back(std::move(exchange));
    } catch (const redis::Failure& failure) {
      answer.failure = failure;
      mark_down(m_members[answer.member], failure);
    }
  }
  const BootTime start = boot_now();
  std::optional<redis::Enough> enough;
  if (quorum_suffices) {
    enough = redis::Enough{static_cast<std::size_t>(m_quorum),
                           start + std::min(per_server, k_longest_per_server)};
  }
  redis::exchange_all(exchanges,
                      start + per_server + (waits ? per_server : Duration()),
                      enough);
  std::vector<std::size_t> lost_script;
  for (std::size_t i = 0; i < exchanges.size(); ++i) {
    auto& exchange = exchanges[i];
    auto& answer = answers[shapes[i].answer];
    auto& member = m_members[answer.member];
    if (exchange.failure) {
      answer.failure = exchange.failure;
      mark_down(member, *exchange.failure);
      continue;
    }
    mark_up(member);
    std::size_t at = 0;
    if (shapes[i].info) {
      answer.unknown_start =
          note_server(member, *exchange.connection, exchange.replies[at++]);
    }
    answer.started = exchange.connection->server_started();
    auto& reply = exchange.replies[at];
    if (redis::is_noscript(reply) && !by_source) {
      lost_script.push_back(answer.member);
      continue;
    }
    if (reply.is_error()) {
      answer.failure =
          redis::Failure(redis::FailureKind::server_error,
                         call.what + " on " + exchange.connection->address()
                             + ": " + printable(reply.text),
                         redis::server_code_of(reply.text),
                         reply.text);
      if (answer.failure->server_code() == "READONLY") {
        member.store->disconnect();
      }
      continue;
    }
    answer.reply = std::move(reply);
    const int required = shapes[i].replicas;
    if (required > 0) {
      const auto& wait = exchange.replies[at + 1];
      const auto confirmed =
          wait.type == redis::Reply::Type::integer ? wait.integer : 0;
      if (confirmed < required) {
        // The write stands on the master; it does not count.
        answer.failure = redis::Failure(
            redis::FailureKind::unconfirmed,
            "only " + std::to_string(confirmed) + " of "
                + std::to_string(required) + " replicas of "
                + exchange.connection->address() + " confirmed it");
      }
    }
  }
  if (!lost_script.empty()) {
    for (auto& again : round(lost_script, call, per_server, confirm, true)) {
      for (auto& answer : answers) {
        if (answer.member == again.member) {
          answer = std::move(again);
        }
      }
    }
  }
  return answers;
}

std::string
QuorumStore::unreachable_text(const std::vector<Answer>& answers) const {
  std::string text;
  int silent = 0;
  for (const auto& answer : answers) {
    if (!answer.reply && answer.failure) {
      ++silent;
      text += (text.empty() ? "" : "; ") + std::string(answer.failure->what());
    }
  }
  return std::to_string(silent) + " of " + std::to_string(m_members.size())
         + " servers unreachable, quorum " + std::to_string(m_quorum) + " ("
         + text + ")";
}

std::string
QuorumStore::store_address(std::size_t member) const {
  return m_members[member].store->address();
}

QuorumStore::Answer
QuorumStore::answer_for(std::size_t member) const {
  Answer answer;
  answer.member = member;
  answer.address = store_address(member);
  return answer;
}

void
QuorumStore::require_quorum(const std::vector<Answer>& answers,
                            const std::string& what) const {
  // A server that was slow to answer is there: it just did not agree this
  // time (a loaded machine), and the step may be tried again.
  const auto slow =
      std::count_if(answers.begin(), answers.end(), [](const Answer& answer) {
        return !answer.reply && answer.failure
               && answer.failure->failure_kind()
                      == redis::FailureKind::timed_out;
      });
  if (answered(answers) + slow >= m_quorum) {
    return;
  }
  bool timed_out = true;
  for (const auto& answer : answers) {
    if (!answer.reply && answer.failure
        && answer.failure->failure_kind() != redis::FailureKind::timed_out) {
      timed_out = false;
    }
  }
  throw redis::Failure(
      timed_out ? redis::FailureKind::timed_out : redis::FailureKind::refused,
      (what.empty() ? "" : what + ": ") + unreachable_text(answers));
}

void
QuorumStore::undo(const std::vector<std::size_t>& members,
                  std::string_view name,
                  const std::string& token,
                  Duration bound) {
  if (members.empty()) {
    return;
  }
  try {
    round(members, m_layout->release_call(name, token, false), bound);
  } catch (...) {
    // The leases end by themselves.
  }
}

bool
QuorumStore::raise_fence(const std::vector<std::size_t>& members,
                         const ScriptCall& call,
                         Duration per_server) {
  const auto answers = round(members, call, per_server);
  const auto raised = std::count_if(
      answers.begin(), answers.end(), [](const auto& a) { return a.counts(); });
  // Every later quorum shares a server with these.
  return raised >= quorum::meets_every_quorum(
             static_cast<int>(m_members.size()), m_quorum);
}

} // namespace rlock::lock
