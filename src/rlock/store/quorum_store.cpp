// Over 600 lines: the quorum store's steps share round(), the members' state
// and the restart bookkeeping; issue #24 splits the stores into a room of
// their own, and this file with them (the counting is already apart, in
// quorum_counts.cpp).

#include <rlock/lock/quorum_counts.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/redis/fanout.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/util/fd.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/random.hpp>
#include <rlock/util/text.hpp>

#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

namespace rlock::lock {

namespace {

using std::chrono::milliseconds;

constexpr Duration k_longest_per_server = milliseconds(50);
constexpr Duration k_undo_bound = std::chrono::seconds(1);
constexpr Duration k_status_bound = std::chrono::seconds(2);
// A step other than the acquire waits this long at most for the servers
// that are slow to answer: one frozen server must not hold up each step
// for the whole reply timeout.
constexpr Duration k_round_bound = std::chrono::seconds(1);
// A subscription that is not confirmed within this is left out: the
// waiter's timers cover what it would have heard.
constexpr Duration k_subscribe_bound = milliseconds(500);

std::int64_t
to_ms(Duration duration) {
  return std::chrono::duration_cast<milliseconds>(duration).count();
}

std::string
info_field(const std::string& info, const std::string& field) {
  const auto fields = parse_info(info);
  const auto it = fields.find(field);
  return it == fields.end() ? std::string() : it->second;
}

// Wakes a waiter when any server wakes it: an epoll descriptor over one
// source per server. A source that breaks is dropped (a wake-up, since one
// may have been lost); only when every one has broken does take() or
// listen() throw.
class QuorumWakeups final : public Wakeups {
public:
  explicit QuorumWakeups(std::vector<std::unique_ptr<Wakeups>> sources)
      : m_epoll(::epoll_create1(EPOLL_CLOEXEC)), m_sources(std::move(sources)) {
    if (m_epoll.get() < 0) {
      throw redis::Failure(redis::FailureKind::closed,
                           std::string("epoll_create1 failed: ")
                               + std::strerror(errno));
    }
    for (std::size_t i = 0; i < m_sources.size(); ++i) {
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.u64 = i;
      ::epoll_ctl(m_epoll.get(), EPOLL_CTL_ADD, m_sources[i]->fd(), &event);
    }
  }

  void
  listen() override {
    each([](Wakeups& source) {
      source.listen();
      return 0;
    });
  }

  int
  fd() const override {
    return m_epoll.get();
  }

  int
  take() override {
    return each([](Wakeups& source) { return source.take(); });
  }

private:
  // Runs `step` on every source left and sums what it returns; a source
  // that fails is dropped and counts 1.
  template <typename Step>
  int
  each(Step&& step) {
    int wakeups = 0;
    std::string last_error;
    for (auto& source : m_sources) {
      if (!source) {
        continue;
      }
      try {
        wakeups += step(*source);
      } catch (const redis::Failure& e) {
        ::epoll_ctl(m_epoll.get(), EPOLL_CTL_DEL, source->fd(), nullptr);
        source.reset();
        last_error = e.what();
        ++wakeups;
      }
    }
    if (std::none_of(m_sources.begin(), m_sources.end(), [](const auto& s) {
          return s != nullptr;
        })) {
      throw redis::Failure(redis::FailureKind::closed,
                           "every wake-up source broke (" + last_error + ")");
    }
    return wakeups;
  }

  UniqueFd m_epoll;
  std::vector<std::unique_ptr<Wakeups>> m_sources;
};

// The reasons of the answers that do not count, joined.
std::string
failures_text(const std::vector<QuorumStore::Answer>& answers) {
  std::string text;
  for (const auto& answer : answers) {
    if (answer.failure) {
      text += (text.empty() ? "" : "; ") + std::string(answer.failure->what());
    }
  }
  return text;
}

// The servers of `answers` that replied.
std::vector<std::size_t>
reachable(const std::vector<QuorumStore::Answer>& answers) {
  std::vector<std::size_t> members;
  for (const auto& answer : answers) {
    if (answer.reply) {
      members.push_back(answer.member);
    }
  }
  return members;
}

// How many of `answers` have a reply.
int
answered(const std::vector<QuorumStore::Answer>& answers) {
  return static_cast<int>(
      std::count_if(answers.begin(), answers.end(), [](const auto& a) {
        return a.reply.has_value();
      }));
}

// The time until `quorum` servers are free, from the PTTLs of the servers
// that hold it and the count of free ones.
std::int64_t
free_in_ms(std::vector<std::int64_t> held_ms, int free, int quorum) {
  const int more = quorum - free;
  if (more <= 0) {
    return 0;
  }
  if (static_cast<int>(held_ms.size()) < more) {
    return -1;
  }
  std::sort(held_ms.begin(), held_ms.end());
  const auto at = held_ms[static_cast<std::size_t>(more - 1)];
  return at < 0 ? -1 : at;
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

QuorumStore::QuorumStore(const Deployment& deployment)
    : m_deployment(deployment) {
  for (auto member : deployment.members) {
    member.prefix = deployment.prefix;
    member.connect = deployment.connect;
    member.restart_grace = deployment.restart_grace;
    Member added;
    added.store = std::make_unique<RedisStore>(member);
    m_members.push_back(std::move(added));
  }
}

std::unique_ptr<LockStore>
QuorumStore::another() const {
  auto store = std::make_unique<QuorumStore>(m_deployment);
  store->m_granted = m_granted;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    auto& copy = store->m_members[i];
    const auto& member = m_members[i];
    copy.store->require_replicas(member.store->required_replicas());
    // A server that just failed is not dialled again by the other thread.
    copy.failures = member.failures;
    copy.down_until = member.down_until;
    copy.last_failure = member.last_failure;
  }
  return store;
}

LockKeys
QuorumStore::keys(std::string_view name) const {
  return m_members.front().store->keys(name);
}

std::string
QuorumStore::key_of(std::string_view name) const {
  return keys(name).lock;
}

std::vector<std::size_t>
QuorumStore::all_members() const {
  std::vector<std::size_t> all(m_members.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    all[i] = i;
  }
  return all;
}

Duration
QuorumStore::step_time() const {
  const Duration io = m_deployment.connect.io_timeout;
  return m_deadline ? std::clamp(*m_deadline - boot_now(), Duration(), io) : io;
}

Duration
QuorumStore::round_time() const {
  return std::max(std::min(step_time(), k_round_bound), k_longest_per_server);
}

Duration
QuorumStore::per_server_time(Duration ttl) const {
  return std::min(k_longest_per_server, ttl / 20);
}

Duration
QuorumStore::clock_allowance(Duration ttl) const {
  return ttl / 100 + milliseconds(2);
}

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
    const auto& described = m_deployment.members[answer.member];
    if (described.sentinel) {
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
    dials.push_back(redis::Dial{described.endpoint, {}, {}});
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
  const auto wanted = std::max<long>(m_deployment.quorum - connected, 0);
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
    enough = redis::Enough{static_cast<std::size_t>(m_deployment.quorum),
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
         + " servers unreachable, quorum " + std::to_string(m_deployment.quorum)
         + " (" + text + ")";
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
  if (answered(answers) + slow >= m_deployment.quorum) {
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
                  const LockKeys& keys,
                  const std::string& token,
                  Duration bound) {
  if (members.empty()) {
    return;
  }
  try {
    round(members, release_call(keys, token, false), bound);
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
  const auto needed =
      static_cast<long>(m_members.size()) - m_deployment.quorum + 1;
  return raised >= needed;
}

AcquireAttempt
QuorumStore::acquire(const LockRequest& request, const WaiterEntry& entry) {
  const auto lock_keys = keys(request.name);
  const int quorum = m_deployment.quorum;
  const auto& grace = m_deployment.restart_grace;
  const BootTime sent = boot_now();
  const auto answers =
      round(all_members(),
            acquire_call(
                lock_keys, request.token, request.ttl, request.holder, entry),
            per_server_time(request.ttl),
            true);
  // Who granted it, who may have (no reply, or one that does not count),
  // and what the others said.
  std::vector<std::size_t> granted;
  std::vector<std::size_t> maybe;
  std::vector<AcquireAttempt> busy;
  std::vector<std::int64_t> fences;
  // The servers whose start cannot be told, while a grace is asked for.
  std::vector<redis::Failure> unknown;
  for (const auto& answer : answers) {
    if (!answer.reply) {
      if (answer.sent) {
        maybe.push_back(answer.member);
      }
      continue;
    }
    AcquireAttempt attempt;
    try {
      attempt = decode_acquire(*answer.reply,
                               "cannot acquire lock " + quote(request.name));
    } catch (const redis::Failure&) {
      maybe.push_back(answer.member);
      continue;
    }
    // A server that will not say when it started may have restarted empty
    // a moment ago: it never counts (one server refuses the same way).
    const bool start_unknown =
        grace.length > Duration::zero() && answer.unknown_start;
    if (start_unknown) {
      unknown.push_back(*answer.unknown_start);
    }
    const auto held_back_by =
        answer.started && !start_unknown
            ? held_back(answer.address, *answer.started, grace, boot_now())
            : std::nullopt;
    if (attempt.acquired && answer.counts() && !held_back_by
        && !start_unknown) {
      granted.push_back(answer.member);
      fences.push_back(attempt.fence);
    } else if (attempt.acquired) {
      maybe.push_back(answer.member);
      if (held_back_by) {
        busy.push_back(*held_back_by);
      } else if (start_unknown) {
        AcquireAttempt refused;
        refused.held_back = answer.unknown_start->what();
        busy.push_back(refused);
      }
    } else {
      busy.push_back(attempt);
    }
  }
  const Duration allowance = clock_allowance(request.ttl);
  const bool in_time = boot_now() < sent + request.ttl - allowance;
  const Duration per_server = per_server_time(request.ttl);
  std::string short_by;
  if (static_cast<int>(granted.size()) >= quorum && !in_time) {
    short_by = "too late to count";
  } else if (static_cast<int>(granted.size()) >= quorum) {
    const auto fence = *std::max_element(fences.begin(), fences.end());
    if (raise_fence(reachable(answers),
                    raise_fence_call(lock_keys, request.token, fence),
                    per_server)) {
      m_granted.clear();
      for (const auto member : granted) {
        m_granted[member] = m_members[member].run_id;
      }
      m_splits = 0;
      undo(maybe, lock_keys, request.token, per_server);
      AcquireAttempt won;
      won.acquired = true;
      won.fence = fence;
      won.sent = sent;
      won.clock_allowance = allowance;
      won.granted = static_cast<int>(granted.size());
      won.servers = static_cast<int>(m_members.size());
      return won;
    }
    short_by = "too few servers took its fence";
  }
  const int agreed = static_cast<int>(granted.size());
  granted.insert(granted.end(), maybe.begin(), maybe.end());
  undo(granted, lock_keys, request.token, per_server);
  if (static_cast<int>(m_members.size() - unknown.size()) < quorum) {
    // Too few servers can say when they started for any quorum to count.
    throw unknown.front();
  }
  require_quorum(answers, "cannot acquire lock " + quote(request.name));
  auto result = not_won(busy, agreed, request.ttl, short_by);
  const int silent = static_cast<int>(m_members.size()) - answered(answers);
  if (quorum::split_vote(busy, silent, quorum)) {
    // Nobody holds it: every contender of the split undoes what it got.
    // Look again soon, at random, so that one of us wins next time.
    ++m_splits;
    result.retry_ms =
        1
        + static_cast<std::int64_t>(
            random_below_or_equal(static_cast<std::uint64_t>(
                quorum::split_backoff_span_ms(m_splits, to_ms(per_server)))));
  } else {
    m_splits = 0;
  }
  return result;
}

AcquireAttempt
QuorumStore::not_won(const std::vector<AcquireAttempt>& busy,
                     int granted,
                     Duration ttl,
                     const std::string& short_by) const {
  // The holder most servers name speaks for them all.
  std::map<std::string, int> votes;
  const AcquireAttempt* spokesman = nullptr;
  for (const auto& attempt : busy) {
    const int count = ++votes[attempt.holder + '\n' + attempt.held_back];
    if (spokesman == nullptr
        || count > votes[spokesman->holder + '\n' + spokesman->held_back]) {
      spokesman = &attempt;
    }
  }
  AcquireAttempt result;
  if (spokesman != nullptr) {
    result = *spokesman;
  } else {
    result.holder = "no quorum (" + std::to_string(granted) + " of "
                    + std::to_string(m_members.size())
                    + " servers granted it, quorum "
                    + std::to_string(m_deployment.quorum)
                    + (short_by.empty() ? "" : ", but " + short_by) + ")";
  }
  result.acquired = false;
  result.servers = static_cast<int>(m_members.size());
  result.granted = granted;
  // The servers that did not say "held" (free, slow or unreachable) may
  // grant it next time; the others free up as their leases end.
  std::vector<std::int64_t> held_ms;
  for (const auto& attempt : busy) {
    held_ms.push_back(attempt.retry_ms);
  }
  const int not_held = static_cast<int>(m_members.size() - busy.size());
  result.retry_ms = free_in_ms(held_ms, not_held, m_deployment.quorum);
  if (result.retry_ms == 0) {
    // Enough servers are not held, but others asked at the same moment, or
    // some were slow: back off a little, at random, so that one of us wins
    // next time.
    const auto spread =
        std::max<std::int64_t>(2 * to_ms(per_server_time(ttl)), 20);
    result.retry_ms = static_cast<std::int64_t>(
        random_below_or_equal(static_cast<std::uint64_t>(spread)));
  }
  return result;
}

std::vector<AcquireAttempt>
QuorumStore::peek_each(std::string_view name) {
  const std::string what = "cannot read lock " + quote(name);
  const auto answers =
      round(all_members(), peek_call(keys(name)), round_time());
  require_quorum(answers, what);
  std::vector<AcquireAttempt> attempts;
  for (const auto& answer : answers) {
    if (answer.counts()) {
      attempts.push_back(decode_peek(*answer.reply, what));
    }
  }
  return attempts;
}

AcquireAttempt
QuorumStore::peek(std::string_view name) {
  const BootTime sent = boot_now();
  std::vector<AcquireAttempt> busy;
  int free = 0;
  for (auto& attempt : peek_each(name)) {
    if (attempt.acquired) {
      ++free;
    } else {
      busy.push_back(std::move(attempt));
    }
  }
  if (free >= m_deployment.quorum) {
    AcquireAttempt open;
    open.acquired = true;
    open.sent = sent;
    return open;
  }
  auto attempt = not_won(busy, 0, std::chrono::seconds(30));
  attempt.sent = sent;
  return attempt;
}

std::int64_t
QuorumStore::lease_remaining_ms(std::string_view name) {
  std::vector<std::int64_t> held_ms;
  for (const auto& attempt : peek_each(name)) {
    if (!attempt.acquired) {
      held_ms.push_back(attempt.retry_ms);
    }
  }
  // A server that did not say "held" may grant it: free as far as a waiter
  // deciding whether to look again can tell.
  const int not_held = static_cast<int>(m_members.size() - held_ms.size());
  if (not_held >= m_deployment.quorum) {
    return -2;
  }
  return free_in_ms(held_ms, not_held, m_deployment.quorum);
}

Renewal
QuorumStore::renew(std::string_view name,
                   const std::string& token,
                   Duration ttl,
                   RenewMode mode) {
  const auto lock_keys = keys(name);
  std::vector<std::size_t> holders;
  for (const auto& [member, run_id] : m_granted) {
    holders.push_back(member);
  }
  if (holders.empty()) {
    // `rlock extend` in a new process: every server that holds it counts.
    holders = all_members();
  }
  auto answers = round(
      holders, renew_call(lock_keys, token, ttl, mode), round_time(), true);
  std::vector<quorum::RenewVote> votes;
  for (auto& answer : answers) {
    using Kind = quorum::RenewVote::Kind;
    const auto granted = m_granted.find(answer.member);
    if (answer.reply && granted != m_granted.end()
        && quorum::restarted_since(granted->second,
                                   m_members[answer.member].run_id)) {
      answer.failure = redis::Failure(
          redis::FailureKind::closed,
          answer.address + " restarted since it granted the lock");
      votes.push_back({Kind::restarted});
      continue;
    }
    if (!answer.counts()) {
      // No reply, an error, or replicas that did not confirm it in time
      // (WAIT): the server may hold it still.
      votes.push_back({Kind::silent});
      continue;
    }
    const auto renewal =
        decode_renew(*answer.reply, "cannot renew lock " + quote(name));
    votes.push_back(
        renewal.held
            ? quorum::RenewVote{Kind::held, renewal.remaining_before_ms}
            : quorum::RenewVote{Kind::not_held});
  }
  const int quorum = m_deployment.quorum;
  if (auto renewal = quorum::count_renewal(
          votes, static_cast<int>(holders.size()), quorum)) {
    renewal->clock_allowance = clock_allowance(ttl);
    return *renewal;
  }
  const auto confirmed = std::count_if(
      votes.begin(), votes.end(), [](const quorum::RenewVote& vote) {
        return vote.kind == quorum::RenewVote::Kind::held;
      });
  throw redis::Failure(
      redis::FailureKind::timed_out,
      "renewed " + quote(name) + " on only " + std::to_string(confirmed)
          + " of " + std::to_string(m_members.size()) + " servers, quorum "
          + std::to_string(quorum) + " (" + failures_text(answers) + ")");
}

bool
QuorumStore::release(std::string_view name, const std::string& token) {
  // A quorum's answers tell what there is to tell: a server that does not
  // answer in the time of an acquire's is left to its lease.
  const auto answers = round(all_members(),
                             release_call(keys(name), token),
                             round_time(),
                             false,
                             false,
                             true);
  m_granted.clear();
  int released = 0;
  int silent = 0;
  for (const auto& answer : answers) {
    if (!answer.counts()) {
      ++silent;
      continue;
    }
    released +=
        decode_yes_no(*answer.reply, "cannot release lock " + quote(name)) ? 1
                                                                           : 0;
  }
  const int quorum = m_deployment.quorum;
  if (released == 0 && silent >= quorum) {
    // Whether it was still held cannot be told.
    throw redis::Failure(redis::FailureKind::timed_out,
                         "cannot release lock " + quote(name) + ": "
                             + failures_text(answers));
  }
  for (const auto& answer : answers) {
    if (!answer.counts()) {
      log::warning("could not release " + quote(name) + " on " + answer.address
                   + ": " + answer.failure->what()
                   + " (its lease there ends by itself)");
    }
  }
  // Held at the end unless too few servers still had it for a quorum.
  return released + silent >= quorum && released > 0;
}

void
QuorumStore::release_quietly(std::string_view name,
                             const std::string& token) noexcept {
  try {
    // It may have been held: the waiters are woken.
    round(all_members(), release_call(keys(name), token), k_undo_bound);
  } catch (...) {
    // The leases end by themselves.
  }
}

std::optional<Duration>
QuorumStore::check(std::string_view name, const std::string& token) {
  const auto answers =
      round(all_members(), check_call(keys(name), token), round_time());
  std::vector<std::int64_t> left_ms;
  int lost = 0;
  for (const auto& answer : answers) {
    if (!answer.counts()) {
      continue;
    }
    const auto left =
        decode_check(*answer.reply, "cannot check lock " + quote(name));
    if (!left) {
      ++lost;
    } else {
      left_ms.push_back(*left == Duration::max() ? -1 : to_ms(*left));
    }
  }
  const int quorum = m_deployment.quorum;
  if (static_cast<int>(left_ms.size()) >= quorum) {
    const auto ms = quorum::quorum_remaining_ms(left_ms, quorum);
    return ms < 0 ? Duration::max() : Duration(milliseconds(ms));
  }
  if (static_cast<int>(m_members.size()) - lost < quorum) {
    return std::nullopt;
  }
  require_quorum(answers, "cannot check lock " + quote(name));
  throw redis::Failure(redis::FailureKind::timed_out,
                       "cannot check lock " + quote(name) + ": "
                           + failures_text(answers));
}

std::optional<BrokenLock>
QuorumStore::force_release(std::string_view name) {
  const auto answers =
      round(all_members(), force_release_call(keys(name)), round_time());
  require_quorum(answers, "cannot break lock " + quote(name));
  std::optional<BrokenLock> broken;
  for (const auto& answer : answers) {
    if (!answer.counts()) {
      log::warning("could not break " + quote(name) + " on " + answer.address
                   + ": " + answer.failure->what());
      continue;
    }
    if (auto found = decode_force_release(*answer.reply,
                                          "cannot break lock " + quote(name));
        found && !broken) {
      broken = std::move(found);
    }
  }
  return broken;
}

void
QuorumStore::leave_queue(std::string_view name, const std::string& token) {
  round(all_members(), leave_queue_call(keys(name), token), round_time());
}

Slot
QuorumStore::current_slot(std::string_view name, Duration length) {
  const auto what = "cannot read the current slot of " + quote(name);
  const auto answers =
      round(all_members(), slot_call(keys(name), length), round_time());
  require_quorum(answers, what);
  // The latest slot any server is in; done when a server recorded a
  // success in it (mark_slot_done() writes to enough servers for every
  // quorum to include one).
  std::optional<Slot> latest;
  for (const auto& answer : answers) {
    if (!answer.counts()) {
      continue;
    }
    const auto slot = decode_slot(*answer.reply, what);
    if (!latest || slot.number > latest->number) {
      latest = slot;
    } else if (slot.number == latest->number) {
      latest->done = latest->done || slot.done;
      latest->left = std::min(latest->left, slot.left);
    }
  }
  if (!latest) {
    throw redis::Failure(redis::FailureKind::timed_out,
                         what + ": " + failures_text(answers));
  }
  return *latest;
}

void
QuorumStore::mark_slot_done(std::string_view name,
                            std::int64_t number,
                            Duration keep) {
  const auto answers = round(
      all_members(), mark_slot_call(keys(name), number, keep), round_time());
  const auto marked = std::count_if(
      answers.begin(), answers.end(), [](const auto& a) { return a.counts(); });
  if (marked < static_cast<long>(m_members.size()) - m_deployment.quorum + 1) {
    throw redis::Failure(redis::FailureKind::timed_out,
                         "cannot record the current slot of " + quote(name)
                             + " on enough servers: " + failures_text(answers));
  }
}

StatusSnapshot
QuorumStore::read_locks(const std::vector<std::string>& names) {
  return gather([&](RedisStore& store) { return store.read_locks(names); });
}

StatusSnapshot
QuorumStore::list_locks(std::string_view match) {
  return gather([&](RedisStore& store) { return store.list_locks(match); });
}

template <typename Read>
StatusSnapshot
QuorumStore::gather(Read&& read) {
  std::vector<StatusSnapshot> snapshots;
  std::vector<std::string> errors;
  for (auto& member : m_members) {
    member.store->set_deadline(
        m_deadline ? m_deadline : std::optional(boot_now() + k_status_bound));
    try {
      snapshots.push_back(read(*member.store));
      errors.emplace_back();
    } catch (const redis::Failure& failure) {
      snapshots.emplace_back();
      errors.emplace_back(failure.what());
    }
    member.store->set_deadline(m_deadline);
  }
  return merge_snapshots(std::move(snapshots), errors);
}

StatusSnapshot
QuorumStore::merge_snapshots(std::vector<StatusSnapshot> snapshots,
                             const std::vector<std::string>& errors) const {
  StatusSnapshot merged;
  merged.servers = static_cast<int>(m_members.size());
  merged.quorum = m_deployment.quorum;
  std::map<std::string, LockState> by_name;
  // Per name, per token: on how many servers, and one server's view.
  std::map<std::string, std::map<std::string, std::pair<int, LockState>>>
      tokens;
  for (std::size_t i = 0; i < snapshots.size(); ++i) {
    const auto address = store_address(i);
    if (!errors[i].empty()) {
      merged.unreachable.push_back(SilentNode{address, errors[i]});
      continue;
    }
    merged.server_now_ms =
        std::max(merged.server_now_ms, snapshots[i].server_now_ms);
    for (auto& lock : snapshots[i].locks) {
      auto& state = by_name[lock.name];
      state.name = lock.name;
      state.key = lock.key;
      state.servers.push_back(ServerLockState{
          address, lock.held, lock.token, lock.ttl_ms, lock.fence, {}});
      if (lock.held) {
        auto& [count, sample] = tokens[lock.name][lock.token];
        if (count++ == 0) {
          sample = lock;
        }
      }
    }
  }
  for (auto& [name, state] : by_name) {
    // The servers that did not answer, too: a lock's count is out of all.
    for (const auto& silent : merged.unreachable) {
      state.servers.push_back(
          ServerLockState{silent.address, false, {}, -1, 0, silent.why});
    }
    const std::pair<int, LockState>* most = nullptr;
    for (const auto& [token, entry] : tokens[name]) {
      if (most == nullptr || entry.first > most->first) {
        most = &entry;
      }
    }
    if (most != nullptr) {
      auto servers = std::move(state.servers);
      state = most->second;
      state.servers = std::move(servers);
      state.quorum = most->first >= m_deployment.quorum;
    }
    merged.locks.push_back(std::move(state));
  }
  return merged;
}

std::vector<ServerFacts>
QuorumStore::examine() {
  std::vector<ServerFacts> facts;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    auto& store = *m_members[i].store;
    store.set_deadline(boot_now() + k_status_bound);
    try {
      auto found = store.examine();
      facts.insert(facts.end(), found.begin(), found.end());
    } catch (const redis::Failure& failure) {
      ServerFacts silent;
      silent.address = store_address(i);
      silent.info_error = failure.what();
      facts.push_back(std::move(silent));
    }
    store.set_deadline(m_deadline);
  }
  return facts;
}

std::optional<DeploymentState>
QuorumStore::deployment_state() {
  DeploymentState state;
  state.quorum = m_deployment.quorum;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    auto& store = *m_members[i].store;
    store.set_deadline(boot_now() + k_status_bound);
    QuorumServer server{store_address(i), {}};
    try {
      store.connect();
    } catch (const redis::Failure& failure) {
      server.error = failure.what();
    }
    store.set_deadline(m_deadline);
    state.quorum_servers.push_back(std::move(server));
  }
  return state;
}

std::unique_ptr<Wakeups>
QuorumStore::watch(std::string_view name, const std::string& token) {
  return watch_each(
      name, [&](RedisStore& store) { return store.watch(name, token); });
}

std::unique_ptr<Wakeups>
QuorumStore::watch_releases(std::string_view name) {
  return watch_each(
      name, [&](RedisStore& store) { return store.watch_releases(name); });
}

template <typename Open>
std::unique_ptr<Wakeups>
QuorumStore::watch_each(std::string_view name, Open&& open) {
  std::vector<std::unique_ptr<Wakeups>> sources;
  std::vector<Answer> answers;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    answers.push_back(answer_for(i));
    const auto& member = m_members[i];
    if (member.down_until && boot_now() < *member.down_until) {
      // It failed a moment ago: not waited for again.
      answers.back().failure = member.last_failure;
      continue;
    }
    try {
      m_members[i].store->set_deadline(
          boot_now() + std::min(step_time(), k_subscribe_bound));
      sources.push_back(open(*m_members[i].store));
      answers.back().reply = redis::Reply{};
    } catch (const redis::Failure& failure) {
      answers.back().failure = failure;
    }
    m_members[i].store->set_deadline(m_deadline);
  }
  require_quorum(answers, "cannot watch lock " + quote(name));
  return std::make_unique<QuorumWakeups>(std::move(sources));
}

void
QuorumStore::connect() {
  std::vector<Answer> answers;
  for (std::size_t i = 0; i < m_members.size(); ++i) {
    answers.push_back(answer_for(i));
  }
  // Once a quorum is connected, the others get an acquire's per-server
  // time more: a server that drops connection requests does not hold the
  // run up for --connect-timeout.
  const Duration budget = m_deadline
                              ? std::clamp(*m_deadline - boot_now(),
                                           Duration(),
                                           m_deployment.connect.connect_timeout)
                              : m_deployment.connect.connect_timeout;
  open_members(answers,
               budget,
               redis::Enough{static_cast<std::size_t>(m_deployment.quorum),
                             boot_now() + k_longest_per_server});
  for (auto& answer : answers) {
    if (!answer.failure) {
      answer.reply = redis::Reply{};
    }
  }
  require_quorum(answers, "");
}

void
QuorumStore::disconnect() {
  for (auto& member : m_members) {
    member.store->disconnect();
  }
}

void
QuorumStore::set_deadline(std::optional<BootTime> deadline) {
  m_deadline = deadline;
  for (auto& member : m_members) {
    member.store->set_deadline(deadline);
  }
}

// The renewer sleeps on this: a server that restarts closes its
// connection, and is noticed at once, as on one server.
int
QuorumStore::idle_fd() const {
  if (m_idle.get() < 0) {
    m_idle = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  }
  bool any = false;
  for (const auto& member : m_members) {
    const int fd = member.store->idle_fd();
    if (fd < 0) {
      continue;
    }
    any = true;
    // A closed descriptor leaves the set by itself; one already in it
    // fails with EEXIST.
    epoll_event event{};
    event.events = EPOLLIN | EPOLLRDHUP;
    event.data.fd = fd;
    ::epoll_ctl(m_idle.get(), EPOLL_CTL_ADD, fd, &event);
  }
  return any && m_idle.get() >= 0 ? m_idle.get() : -1;
}

bool
QuorumStore::idle_connection_broken() {
  bool broken = false;
  for (auto& member : m_members) {
    broken = member.store->idle_connection_broken() || broken;
  }
  return broken;
}

} // namespace rlock::lock
