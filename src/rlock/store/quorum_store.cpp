// The quorum store's steps other than the acquire; its rounds are in
// quorum_store_round.cpp, its acquire in quorum_store_acquire.cpp, its
// status views in quorum_store_survey.cpp, and the counting they share is
// pure, in quorum_acquire.cpp, quorum_counts.cpp and quorum_status.cpp.

#include <rlock/lock/quorum_counts.hpp>
#include <rlock/lock/quorum_status.hpp>
#include <rlock/lock/restart_grace.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/redis/fanout.hpp>
#include <rlock/redis/script.hpp>
#include <rlock/store/quorum_store.hpp>
#include <rlock/store/quorum_store_parts.hpp>
#include <rlock/store/quorum_wakeups.hpp>
#include <rlock/store/replies.hpp>
#include <rlock/store/string_layout.hpp>
#include <rlock/store/style_stores.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/fd.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <sys/epoll.h>

#include <algorithm>

namespace rlock::lock {

using namespace quorum_parts;

namespace {

// The layout of `deployment.compat`'s style. The CLI refuses the styles
// whose libraries keep their lock on one server.
std::unique_ptr<LockLayout>
layout_for(const Deployment& deployment) {
  switch (deployment.compat.style) {
  case LockStyle::rlock:
    return rlock_layout(deployment.prefix);
  case LockStyle::string:
    return std::make_unique<StringLayout>(deployment.compat, deployment.prefix);
  case LockStyle::shedlock:
  case LockStyle::redisson:
    break;
  }
  throw Error(ErrorKind::bad_input,
              "this lock style is kept on one server only, not on a quorum");
}

} // namespace

QuorumStore::QuorumStore(const Deployment& deployment)
    : m_deployment(deployment), m_layout(layout_for(deployment)),
      m_quorum(std::get<Quorum>(deployment.topology).quorum) {
  for (const auto& member : std::get<Quorum>(deployment.topology).members) {
    // One server or a Sentinel master, with what all the servers share.
    auto one = deployment;
    one.topology = std::visit(
        [](const auto& where) -> Topology { return where; }, member.where);
    one.replicas = member.replicas;
    auto stores = style_stores(std::move(one), false);
    Member added;
    added.styled = std::move(stores.store);
    added.store = stores.redis;
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

LockStore&
QuorumStore::viewer(std::size_t member) const {
  return *m_members[member].styled;
}

std::string
QuorumStore::key_of(std::string_view name) const {
  return m_layout->key_of(name);
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
  return quorum::per_server_time(ttl);
}

Duration
QuorumStore::clock_allowance(Duration ttl) const {
  return quorum::clock_allowance(ttl);
}

std::vector<PeekResult>
QuorumStore::peek_each(std::string_view name) {
  const std::string what = "cannot read lock " + quote(name);
  const auto answers =
      round(all_members(), m_layout->peek_call(name), round_time());
  require_quorum(answers, what);
  std::vector<PeekResult> looks;
  for (const auto& answer : answers) {
    if (answer.counts()) {
      looks.push_back(m_layout->decode_peek(*answer.reply, what));
    }
  }
  return looks;
}

PeekResult
QuorumStore::peek(std::string_view name) {
  std::vector<Busy> busy;
  int free = 0;
  for (auto& look : peek_each(name)) {
    if (auto* held = std::get_if<Busy>(&look)) {
      busy.push_back(std::move(*held));
    } else {
      ++free;
    }
  }
  if (free >= m_quorum) {
    return Free{};
  }
  return not_won(busy, 0, std::chrono::seconds(30));
}

std::int64_t
QuorumStore::lease_remaining_ms(std::string_view name) {
  std::vector<std::int64_t> held_ms;
  for (const auto& look : peek_each(name)) {
    if (const auto* held = std::get_if<Busy>(&look)) {
      held_ms.push_back(held->retry_ms);
    }
  }
  // A server that did not say "held" may grant it: free as far as a waiter
  // deciding whether to look again can tell.
  const int not_held = static_cast<int>(m_members.size() - held_ms.size());
  if (not_held >= m_quorum) {
    return -2;
  }
  return quorum::free_in_ms(held_ms, not_held, m_quorum);
}

Renewal
QuorumStore::renew(std::string_view name,
                   const std::string& token,
                   Duration ttl,
                   RenewMode mode) {
  std::vector<std::size_t> holders;
  for (const auto& [member, run_id] : m_granted) {
    holders.push_back(member);
  }
  if (holders.empty()) {
    // `rlock extend` in a new process: every server that holds it counts.
    holders = all_members();
  }
  auto answers = round(holders,
                       m_layout->renew_call(name, token, ttl, mode),
                       round_time(),
                       true);
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
    const auto renewal = m_layout->decode_renew(
        *answer.reply, "cannot renew lock " + quote(name));
    votes.push_back(
        renewal.held
            ? quorum::RenewVote{Kind::held, renewal.remaining_before_ms}
            : quorum::RenewVote{Kind::not_held});
  }
  const int quorum = m_quorum;
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
                             m_layout->release_call(name, token, true),
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
    released += m_layout->decode_release(*answer.reply,
                                         "cannot release lock " + quote(name))
                    ? 1
                    : 0;
  }
  const auto standing = quorum::count_release(released, silent, m_quorum);
  if (standing == quorum::Standing::unknown) {
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
  return standing == quorum::Standing::held;
}

void
QuorumStore::release_quietly(std::string_view name,
                             const std::string& token) noexcept {
  try {
    // It may have been held: the waiters are woken.
    round(
        all_members(), m_layout->release_call(name, token, true), k_undo_bound);
  } catch (...) {
    // The leases end by themselves.
  }
}

std::optional<Duration>
QuorumStore::check(std::string_view name, const std::string& token) {
  const auto answers =
      round(all_members(), m_layout->check_call(name, token), round_time());
  std::vector<std::int64_t> left_ms;
  int lost = 0;
  for (const auto& answer : answers) {
    if (!answer.counts()) {
      continue;
    }
    const auto left = m_layout->decode_check(
        *answer.reply, token, "cannot check lock " + quote(name));
    if (!left) {
      ++lost;
    } else {
      left_ms.push_back(*left == Duration::max() ? -1 : to_ms(*left));
    }
  }
  const auto count = quorum::count_check(
      left_ms, lost, static_cast<int>(m_members.size()), m_quorum);
  if (count.standing == quorum::Standing::held) {
    return count.remaining_ms < 0 ? Duration::max()
                                  : Duration(milliseconds(count.remaining_ms));
  }
  if (count.standing == quorum::Standing::not_held) {
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
      round(all_members(), m_layout->force_release_call(name), round_time());
  require_quorum(answers, "cannot break lock " + quote(name));
  std::optional<BrokenLock> broken;
  for (const auto& answer : answers) {
    if (!answer.counts()) {
      log::warning("could not break " + quote(name) + " on " + answer.address
                   + ": " + answer.failure->what());
      continue;
    }
    if (auto found = m_layout->decode_force_release(
            *answer.reply, "cannot break lock " + quote(name));
        found && !broken) {
      broken = std::move(found);
    }
  }
  return broken;
}

void
QuorumStore::leave_queue(std::string_view name, const std::string& token) {
  if (const auto call = m_layout->leave_queue_call(name, token)) {
    round(all_members(), *call, round_time());
  }
}

Slot
QuorumStore::current_slot(std::string_view name, Duration length) {
  const auto what = "cannot read the current slot of " + quote(name);
  const auto answers =
      round(all_members(), m_layout->slot_call(name, length), round_time());
  require_quorum(answers, what);
  std::vector<Slot> slots;
  for (const auto& answer : answers) {
    if (answer.counts()) {
      slots.push_back(decode_slot(*answer.reply, what));
    }
  }
  const auto latest = quorum::latest_slot(slots);
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
  const auto answers = round(all_members(),
                             m_layout->mark_slot_call(name, number, keep),
                             round_time());
  const auto marked = std::count_if(
      answers.begin(), answers.end(), [](const auto& a) { return a.counts(); });
  if (marked < quorum::meets_every_quorum(static_cast<int>(m_members.size()),
                                          m_quorum)) {
    throw redis::Failure(redis::FailureKind::timed_out,
                         "cannot record the current slot of " + quote(name)
                             + " on enough servers: " + failures_text(answers));
  }
}

std::unique_ptr<Wakeups>
QuorumStore::watch(std::string_view name, const std::string& token) {
  return watch_each(name,
                    [&](LockStore& store) { return store.watch(name, token); });
}

std::unique_ptr<Wakeups>
QuorumStore::watch_releases(std::string_view name) {
  return watch_each(
      name, [&](LockStore& store) { return store.watch_releases(name); });
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
    auto& store = viewer(i);
    try {
      store.set_deadline(boot_now() + std::min(step_time(), k_subscribe_bound));
      sources.push_back(open(store));
      answers.back().reply = redis::Reply{};
    } catch (const redis::Failure& failure) {
      answers.back().failure = failure;
    }
    store.set_deadline(m_deadline);
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
               redis::Enough{static_cast<std::size_t>(m_quorum),
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
