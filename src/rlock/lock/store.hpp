#pragma once

#include <rlock/lock/lease.hpp>
#include <rlock/lock/server_facts.hpp>
#include <rlock/util/clock.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::lock {

class LockStore;

// Turns readable (fd()) when a lock a waiter watches may have come free:
// its holder released it, or the waiter's turn in the --fair queue came.
class Wakeups {
public:
  virtual ~Wakeups() = default;

  // Makes sure the next wake-up is heard; call before each wait on fd(). A
  // wake-up meant for one waiter is taken once: listening again after it is
  // a step of its own. Throws redis::Failure when the source broke.
  virtual void listen() = 0;

  // Returns a descriptor to wait on with poll(2).
  virtual int fd() const = 0;

  // Returns how many wake-ups arrived since the last call, without
  // blocking. Throws redis::Failure when the source broke: wake-ups may have
  // been missed.
  virtual int take() = 0;
};

// The session a store keeps: its connections, made at the first step and
// again after a failure. One store is one thread's session: it is not
// thread-safe; a thread of its own (the renewer) opens a store of its own
// with another().
class StoreSession {
public:
  virtual ~StoreSession() = default;

  // Returns a store of its own on the same servers, for another thread.
  virtual std::unique_ptr<LockStore> another() const = 0;

  // Connects now rather than at the first step.
  virtual void connect() = 0;

  // Drops the connections; the next step makes new ones.
  virtual void disconnect() = 0;

  // Bounds every later step, its connecting included, to end by `deadline`
  // (nothing: the configured timeouts alone).
  virtual void set_deadline(std::optional<BootTime> deadline) = 0;

  // Returns a descriptor that turns readable when an idle connection hears
  // from its server (it closed, or says something unasked), -1 when not
  // connected. Then ask idle_connection_broken().
  virtual int idle_fd() const = 0;

  // True when an idle connection was closed by its server or heard something
  // unasked: the next step must make a new one.
  virtual bool idle_connection_broken() = 0;
};

// The steps on one lock: what a run, a waiter, a renewer and the script
// steps (acquire, extend, release, check, wait) use.
//
// Every step throws redis::Failure when the servers fail or answer with an
// error (redis::may_pass() tells whether trying again on a new connection
// may help); "not held" and "busy" are answers, not failures.
class LockSteps {
public:
  virtual ~LockSteps() = default;

  // Returns where lock `name` is kept, for people and scripts ($RLOCK_KEY).
  virtual std::string key_of(std::string_view name) const = 0;

  // Tries once to take the lock for `request`. A waiter that does not get
  // it keeps its place in the wait queue as `entry` says (--fair, or a
  // place outside --fair when it finds a queue or, for a plain hold, shared
  // holders).
  // A store that holds new servers back (--restart-grace) answers busy with
  // `held_back` set while it does.
  virtual AcquireAttempt acquire(const LockRequest& request,
                                 const WaiterEntry& entry) = 0;

  // Looks at the lock without taking it: free, or its holder and retry
  // hint as acquire() would say them.
  virtual PeekResult peek(std::string_view name) = 0;

  // Returns the lease left in ms: -2 when the lock is free, -1 for a lease
  // without expiry. The cheapest look, for a waiter deciding to sleep on.
  virtual std::int64_t lease_remaining_ms(std::string_view name) = 0;

  // Extends `token`'s lease to `ttl` from the send (zero: the length it was
  // taken with), as `mode` says.
  virtual Renewal renew(std::string_view name,
                        const std::string& token,
                        Duration ttl,
                        RenewMode mode) = 0;

  // Ends `token`'s lease and wakes the next waiter; false when `token` did
  // not hold the lock.
  virtual bool release(std::string_view name, const std::string& token) = 0;

  // Releases the lock if `token` holds it, on connections of its own with
  // every step bounded by a second; failures are ignored. For the moments
  // when it is unknown whether we hold it, or the lease is given up: a stale
  // lease must not block others for a TTL.
  virtual void release_quietly(std::string_view name,
                               const std::string& token) noexcept = 0;

  // Returns the lease left when `token` holds the lock (Duration::max()
  // without expiry), nothing when it does not.
  virtual std::optional<Duration> check(std::string_view name,
                                        const std::string& token) = 0;

  // Ends the lease whoever holds it and wakes the next waiter; returns whose
  // it was, nothing when it was free.
  virtual std::optional<BrokenLock> force_release(std::string_view name) = 0;

  // Takes a waiter that gives up out of the --fair queue, waking the next
  // one if the lock is free.
  virtual void leave_queue(std::string_view name, const std::string& token) = 0;

  // Returns the current --once-per slot of `length`.
  virtual Slot current_slot(std::string_view name, Duration length) = 0;

  // Records that the run for slot `number` succeeded, for `keep`.
  virtual void
  mark_slot_done(std::string_view name, std::int64_t number, Duration keep) = 0;

  // Starts watching for the wake-ups of a waiter for lock `name` with
  // `token`: a release wakes one waiter (the queue's head, or one outside
  // the queue); a wake-up sent while no waiter listens is kept for the
  // next that does.
  virtual std::unique_ptr<Wakeups> watch(std::string_view name,
                                         const std::string& token) = 0;

  // Starts watching for every release of lock `name`, for a look that takes
  // nothing (rlock wait). Returns once no later release can be missed.
  virtual std::unique_ptr<Wakeups> watch_releases(std::string_view name) = 0;
};

// A read-only look at the locks and the servers, for rlock status and rlock
// doctor. Throws redis::Failure as the steps do.
class StoreSurvey {
public:
  virtual ~StoreSurvey() = default;

  // Reads the named locks, in the order given.
  virtual StatusSnapshot read_locks(const std::vector<std::string>& names) = 0;

  // Reads every held lock whose NAME matches the glob `match`, by name.
  virtual StatusSnapshot list_locks(std::string_view match) = 0;

  // Returns what each server says about itself, for rlock doctor.
  virtual std::vector<ServerFacts> examine() = 0;

  // Returns how a replicated deployment stands (Sentinel: the master, its
  // replicas, each sentinel's view; Cluster: each shard; a quorum: each
  // server); nothing for a single server.
  virtual std::optional<DeploymentState> deployment_state() = 0;
};

// The lock steps on a session: what a waiter, a renewer and a held lock
// take (they reconnect, bound their steps, hand a store to the renewer's
// thread).
class LockSession : public LockSteps, public StoreSession {};

// Where locks are kept, all three roles in one: what open_store() returns
// (store/open_store.cpp). One class per kind of deployment implements it:
// one server or a Sentinel master (RedisStore), a Redis Cluster
// (ClusterStore), a quorum of servers (QuorumStore), a server that may turn
// out to be a Cluster node (DiscoveringStore); a store that wraps another
// derives from ForwardingStore (store/forwarding_store.hpp) and overrides
// only what it changes. Several holders per NAME (semaphores, shared locks)
// are LockRequest::limit and parent_token, in every store.
class LockStore : public LockSession, public StoreSurvey {};

} // namespace rlock::lock
