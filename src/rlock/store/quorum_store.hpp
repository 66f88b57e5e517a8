#pragma once

#include <rlock/lock/deployment.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/fanout.hpp>
#include <rlock/store/lock_layout.hpp>
#include <rlock/store/protocol.hpp>
#include <rlock/store/redis_store.hpp>
#include <rlock/util/fd.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rlock::lock {

// The store over several independent masters (Redlock): a lock is held when
// a quorum of them granted it to one token.
//
// Each step sends its script to every server at once, from this thread, and
// reads the replies as they come; a server that does not answer within the
// step's per-server time counts as one that did not agree. Servers not
// connected are dialled all at once within that time too, and one that
// failed is left out of the steps for a while (quorum::down_for()). The
// acquire is won with a quorum of grants, else undone on every server that may
// have granted it; its lease counts from before the first send, minus an
// allowance for clocks that run faster than ours (1% of the TTL plus 2 ms).
// Renewals go only to the servers that granted it, never re-create a key,
// and count only with a quorum, a server whose run_id changed since the
// acquire (it restarted) not among them. The fence handed out is the
// highest of the granting servers', written back to the servers before the
// acquire counts, so that the next holder's quorum, which shares a server
// with this one, gets a higher one.
//
// The lock is kept in the layout of the deployment's style (LockLayout):
// rlock's own, or the SET-NX family's (--compat string), as redsync and
// node-redlock keep theirs on several servers.
class QuorumStore final : public LockStore {
public:
  explicit QuorumStore(const Deployment& deployment);

  std::unique_ptr<LockStore> another() const override;
  std::string key_of(std::string_view name) const override;
  AcquireAttempt acquire(const LockRequest& request,
                         const WaiterEntry& entry) override;
  PeekResult peek(std::string_view name) override;
  std::int64_t lease_remaining_ms(std::string_view name) override;
  Renewal renew(std::string_view name,
                const std::string& token,
                Duration ttl,
                RenewMode mode) override;
  bool release(std::string_view name, const std::string& token) override;
  void release_quietly(std::string_view name,
                       const std::string& token) noexcept override;
  std::optional<Duration> check(std::string_view name,
                                const std::string& token) override;
  std::optional<BrokenLock> force_release(std::string_view name) override;
  void leave_queue(std::string_view name, const std::string& token) override;
  Slot current_slot(std::string_view name, Duration length) override;
  void mark_slot_done(std::string_view name,
                      std::int64_t number,
                      Duration keep) override;
  StatusSnapshot read_locks(const std::vector<std::string>& names) override;
  StatusSnapshot list_locks(std::string_view match) override;
  std::vector<ServerFacts> examine() override;
  std::optional<DeploymentState> deployment_state() override;
  std::unique_ptr<Wakeups> watch(std::string_view name,
                                 const std::string& token) override;
  std::unique_ptr<Wakeups> watch_releases(std::string_view name) override;
  void connect() override;
  void disconnect() override;
  void set_deadline(std::optional<BootTime> deadline) override;
  int idle_fd() const override;
  bool idle_connection_broken() override;

  // What one server answered in a round: the script's reply when it ran,
  // and why it does not count when it does not (no reply, an error reply,
  // replicas that did not confirm it, a restart since the acquire).
  struct Answer {
    std::size_t member = 0;
    std::optional<redis::Reply> reply;
    std::optional<redis::Failure> failure;
    // When the server started at the latest, once known.
    std::optional<BootTime> started;
    std::string address;
    // The script went out (it may have run, whatever the answer).
    bool sent = false;
    // Why the server's start cannot be told (it refused INFO), when it
    // cannot: a restart grace cannot hold it back.
    std::optional<redis::Failure> unknown_start;

    bool
    counts() const {
      return reply.has_value() && !failure.has_value();
    }
  };

private:
  struct Member {
    // The style's store on this server (style_stores()): status and the
    // waiters' wake-ups read through it. `store` is the RedisStore under
    // it, whose connection the rounds drive.
    std::unique_ptr<LockStore> styled;
    RedisStore* store = nullptr;
    // The run_id the server reported on the current connection ("" until
    // asked, or when it refused INFO).
    std::string run_id;
    // Failures in a row (no connection, no answer in time), and until when
    // the steps leave the server out for them, with the last one.
    int failures = 0;
    std::optional<BootTime> down_until;
    std::optional<redis::Failure> last_failure;
  };

  // Sends `call` to each of `members` at once and reads the replies until
  // `per_server` has passed since the send (plus, when `confirm` and a
  // server's replicas must confirm writes, the WAIT for them). A new
  // connection also asks the server's run_id and uptime; a server that lost
  // the script is sent it once more. A server that failed is disconnected.
  // With `quorum_suffices`, stops waiting for the others once a quorum
  // answered and `per_server` (at most the acquire's) has passed.
  std::vector<Answer> round(const std::vector<std::size_t>& members,
                            const ScriptCall& call,
                            Duration per_server,
                            bool confirm = false,
                            bool by_source = false,
                            bool quorum_suffices = false);
  // Connects the servers of `answers` that have no connection, all at once,
  // within `budget`; those left out for a recent failure, and those that
  // did not connect, get their answer's failure. With `enough`, stops
  // waiting as exchange_all() does.
  void open_members(std::vector<Answer>& answers,
                    Duration budget,
                    std::optional<redis::Enough> enough = std::nullopt);
  // Leaves `member` out of the steps for a while after `failure`, or lets
  // it back in after a success.
  void mark_down(Member& member, const redis::Failure& failure);
  void mark_up(Member& member);
  std::vector<std::size_t> all_members() const;
  // The run's (or the step's) own bound on a round: what is left until the
  // deadline, at most the reply timeout.
  Duration step_time() const;
  // A round's bound, other than an acquire's: step_time(), at most a second.
  Duration round_time() const;
  // Undoes an acquire on `members` (those that granted it or may have),
  // within a second; failures are left to the leases.
  void undo(const std::vector<std::size_t>& members,
            std::string_view name,
            const std::string& token,
            Duration bound);
  // Writes a fence back to `members` (raise_fence_call); true when enough
  // took it for every later quorum to include one of them.
  bool raise_fence(const std::vector<std::size_t>& members,
                   const ScriptCall& call,
                   Duration per_server);
  // Looks at lock `name` on every server: what each that answered says
  // (peek's reply); throws Failure when fewer than a quorum answered.
  std::vector<PeekResult> peek_each(std::string_view name);
  // Throws Failure naming the servers that did not answer, when fewer than
  // a quorum did.
  void require_quorum(const std::vector<Answer>& answers,
                      const std::string& what) const;
  std::string unreachable_text(const std::vector<Answer>& answers) const;
  // The answer to an acquire that was not won, from what the servers that
  // did not grant it said (`busy`).
  // `short_by` says why `granted` grants did not win, when they were a
  // quorum (they came too late).
  Busy not_won(const std::vector<Busy>& busy,
               int granted,
               Duration ttl,
               const std::string& short_by = "") const;
  Duration per_server_time(Duration ttl) const;
  Duration clock_allowance(Duration ttl) const;
  // Notes what a new connection's INFO said: the run_id (or none) and the
  // start; returns why the start cannot be told, if it cannot.
  std::optional<redis::Failure>
  note_server(Member& member, redis::Connection& c, const redis::Reply& info);
  // The store that shows `member`'s locks in the layout's style.
  LockStore& viewer(std::size_t member) const;
  std::string store_address(std::size_t member) const;
  // An answer of `member`'s, with nothing in it yet.
  Answer answer_for(std::size_t member) const;
  // Opens `open`(a server's store) on every server, each bounded, and
  // wakes on any; throws Failure when fewer than a quorum opened.
  template <typename Open>
  std::unique_ptr<Wakeups> watch_each(std::string_view name, Open&& open);
  // Runs `read` on every server's store, each bounded, and merges what they
  // say lock by lock.
  template <typename Read>
  StatusSnapshot gather(Read&& read);
  StatusSnapshot merge_snapshots(std::vector<StatusSnapshot> snapshots,
                                 const std::vector<std::string>& errors) const;

  Deployment m_deployment;
  std::unique_ptr<LockLayout> m_layout;
  int m_quorum = 0; // how many servers must agree
  std::vector<Member> m_members;
  std::optional<BootTime> m_deadline;
  // Since the last won acquire: the servers that granted it and the run_id
  // each had then.
  std::map<std::size_t, std::string> m_granted;
  // Split votes lost in a row, for the back-off after the next.
  int m_splits = 0;
  // idle_fd(): an epoll descriptor over the servers' connections.
  mutable UniqueFd m_idle;
};

} // namespace rlock::lock
