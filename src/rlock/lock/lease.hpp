#pragma once

#include <rlock/redis/cluster.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/duration.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

// What a lock store says, in lock terms: holders, leases and tokens, never
// a server's replies.
namespace rlock::lock {

// Who holds a lock, as `status` shows it.
struct Holder {
  std::string host;
  long pid = 0;
  std::string user;
  std::string command;
};

// The limit of a shared (read) lock: any number of shared holders at once,
// and no plain holder while one lives. Plain and shared holders exclude each
// other on one NAME; a semaphore's limit is a lock of its own kind.
inline constexpr std::int64_t k_shared_limit = -1;

// A request to hold lock `name` with `token` for `ttl`: the lock itself
// (limit 0), one of `limit` permits of a semaphore, or a shared hold
// (k_shared_limit).
struct LockRequest {
  std::string name;
  std::string token;
  Duration ttl{};
  Holder holder;
  std::int64_t limit = 0;
  // The token of the run this one is nested in, when that run holds the
  // same lock (a run inside a run). A shared hold inside a shared one gets
  // in beside it even if a plain waiter waits, which would otherwise wait
  // for the outer one; a request the outer run's hold excludes takes no
  // place in the queue: it may be waiting for its own parent.
  std::string parent_token{};
};

// How a waiter that does not get the lock keeps its place meanwhile (zero:
// it does not).
struct WaiterEntry {
  // --fair: joins the queue, or refreshes its place there, for this long.
  Duration queue_ttl{};
  // A waiter outside --fair: when it finds a queue (or has a place in it
  // already), or, waiting for a plain hold, finds shared holders (writers
  // first), joins the queue or refreshes its place there for this long, so
  // that later comers do not pass it and a release wakes it in its turn.
  Duration place_ttl{};
  // This attempt follows a wait: other waiters may wait still, so the
  // holder's release is to wake one.
  bool waited = false;

  bool operator==(const WaiterEntry&) const = default;
};

// A lock an acquire attempt got.
struct Granted {
  // The fencing token.
  std::int64_t fence = 0;
  // How many replicas confirmed it (0 when none were asked).
  int replicas = 0;
  // As one of a semaphore's holders: the lowest index in 0..limit-1 no
  // other live holder had (-1 for a plain lock).
  std::int64_t slot = -1;
  // When the request was sent: the lease counts from here.
  BootTime sent{};
  // A quorum of servers (Redlock): how many granted it, of how many (0 and
  // 0 elsewhere), and how much earlier than `sent` the lease counts as
  // taken, for the servers' clocks that may run faster than ours.
  int granted = 0;
  int servers = 0;
  Duration clock_allowance{};
};

// A lock an attempt did not get, or a look found held: who holds it and when
// to look again.
struct Busy {
  // Look again after this at the latest (-1: no hint).
  std::int64_t retry_ms = -1;
  // "user@host:pid", or who is ahead in the queue.
  std::string holder;
  // The holder's command line.
  std::string command;
  // 1-based place in the --fair queue, 0 outside it.
  std::int64_t place = 0;
  // The holder's lease length, 0 if unknown.
  std::int64_t holder_ttl_ms = 0;
  // How long the holder has held it.
  std::int64_t held_ms = 0;
  // Shared holders hold it, and how many hold it (a semaphore's or shared
  // lock's; 1 for a plain lock, 0 if unknown).
  bool shared_holders = false;
  std::int64_t holders = 0;
  // An acquire refused because the lock has live holders under another
  // limit: that limit (0: a plain lock, k_shared_limit: a shared one).
  std::optional<std::int64_t> limit_conflict;
  // Held back because the server started too recently (--restart-grace):
  // why, for people; retry_ms is when the grace ends.
  std::string held_back;
  // The holder sends no wake-up when it releases (an application's lock,
  // --compat): a waiter also looks again after a short backoff.
  bool polled = false;
};

// The answer to one acquire attempt: the lock, or who holds it. A default
// one is busy, with nobody known.
using AcquireAttempt = std::variant<Busy, Granted>;

// A look at a lock (peek) that found it free.
struct Free {};

// The answer to a look at a lock: free, or who holds it.
using PeekResult = std::variant<Busy, Free>;

// A lock broken by release --force.
struct BrokenLock {
  std::string holder; // user@host:pid
  std::string command;
  std::string token;
  std::int64_t holders = 1; // a semaphore or shared lock: how many held it
  bool shared = false;      // they held it shared
};

// --once-per's view of the current slot, by the server's clock.
struct Slot {
  std::int64_t number = 0;
  bool done = false; // a run already succeeded in it
  Duration left{};   // until the next slot begins
};

// How a renewal sets the lease: `exact` makes it end `ttl` from now (the
// supervising run's renewals and its --hold); `at_least` only ever lengthens
// it (`rlock extend`, which may run inside a supervised job).
enum class RenewMode { exact, at_least };

// The answer to one renewal.
struct Renewal {
  bool held = false;
  // The lease's PTTL found before extending it: -1 without expiry, -2 when
  // not held.
  std::int64_t remaining_before_ms = -2;
  // A quorum of servers (Redlock): how many confirmed it (0 elsewhere), and
  // how much earlier than its send the lease counts as renewed, for the
  // servers' clocks that may run faster than ours.
  int confirmed = 0;
  Duration clock_allowance{};
};

// A quorum of servers (Redlock): one server's view of a lock.
struct ServerLockState {
  std::string server; // its address
  bool held = false;
  std::string token;
  std::int64_t ttl_ms = -1;
  std::int64_t fence = 0;
  std::string error; // why it did not answer; "" when it did
};

// Who holds a lock, or a permit of a semaphore, as the server records it.
struct HolderRecord {
  std::string token;
  std::int64_t fence = 0;
  std::string host;
  std::int64_t pid = 0;
  std::string user;
  std::string command;
  std::int64_t acquired_ms = 0; // server time, ms since the epoch
  std::int64_t renewals = 0;
};

// One holder of a semaphore (a lock with a limit), as status shows it.
struct PermitHolder : HolderRecord {
  std::int64_t slot = 0;
  std::int64_t ttl_ms = 0;
};

// Redis Cluster: the master that keeps a lock and its key's slot.
struct ClusterPlace {
  std::string node;
  int slot = -1;
};

// A quorum of servers (Redlock): each server's view of a lock, and whether
// one token holds it on a quorum of them.
struct QuorumView {
  std::vector<ServerLockState> servers;
  bool agreed = false;
};

// What the store says about one lock at one moment. The holder's record
// is meaningful only when held.
struct LockState : HolderRecord {
  std::string name;
  std::string key;
  bool held = false;
  std::int64_t ttl_ms = -1; // when held; -1: the lease has no expiry
  // Waiters alive in the --fair queue (others are not counted).
  std::int64_t waiters = 0;
  // A semaphore: its limit and live holders, by slot (the holder fields
  // above are then unset, and ttl_ms is until the last lease ends). 0 and
  // none for a plain lock; k_shared_limit and its shared holders for a
  // shared one.
  std::int64_t limit = 0;
  std::vector<PermitHolder> holders;
  // Redis Cluster only: where the lock is kept.
  std::optional<ClusterPlace> cluster;
  // A quorum of servers only: how each server sees the lock (the fields
  // above are then those of the token on a quorum, else on the most servers).
  std::optional<QuorumView> quorum;
};

// A Redis Cluster master that did not answer, and why.
struct SilentNode {
  std::string address;
  std::string why;
};

struct StatusSnapshot {
  std::int64_t server_now_ms = 0; // to tell how long each lock has been held
  std::vector<LockState> locks;
  // Redis Cluster: each master that did not answer; the locks are those of
  // the masters that did. A quorum of servers: each server that did not.
  std::vector<SilentNode> unreachable;
  // A quorum of servers: how many there are and must agree (0 elsewhere).
  int servers = 0;
  int quorum = 0;
};

// A replica as its master reports it (INFO replication).
struct ReplicaState {
  std::string address;
  std::string state;       // "online", "wait_bgsave"...
  std::int64_t lag_s = -1; // seconds since its last acknowledgement
};

// A sentinel's view, for status and doctor.
struct SentinelState {
  std::string address;
  std::string master;                          // the master it names; "" none
  std::map<std::string, std::string> settings; // SENTINEL MASTER's fields
  std::string quorum_check;                    // SENTINEL CKQUORUM's reply
  std::string error; // why it did not answer; "" when it did
};

// One master of a Redis Cluster, the slots it serves and its replicas, for
// status and doctor.
struct ClusterShardState {
  std::string master;                      // its address
  int slots = 0;                           // how many slots it serves
  std::vector<redis::SlotSpan> slot_spans; // as the slot map says
  std::vector<ReplicaState> replicas; // as it reports them (INFO replication)
  // Its CLUSTER INFO fields (cluster_state, cluster_slots_ok...) and its
  // cluster-node-timeout in ms (-1 when CONFIG GET was refused).
  std::map<std::string, std::string> cluster_info;
  std::int64_t node_timeout_ms = -1;
  std::string error; // why it did not answer; "" when it did
};

// A server of a quorum (Redlock), and why it did not answer ("" when it did).
struct QuorumServer {
  std::string address;
  std::string error;
};

// How a Sentinel deployment stands: where the store writes, its replicas,
// and what each sentinel says.
struct SentinelDeploymentState {
  std::string master_name; // Sentinel's name for the master
  std::string master;      // the master's address
  std::vector<ReplicaState> replicas;
  std::vector<SentinelState> sentinels;
};

// How a Redis Cluster stands: one entry per master of the slot map, by first
// slot, and the slots no master serves (none when all 16384 are served).
struct ClusterDeploymentState {
  std::vector<ClusterShardState> shards;
  std::vector<redis::SlotSpan> uncovered_slots;
};

// How a quorum of servers (Redlock) stands: each server, and how many must
// agree.
struct QuorumDeploymentState {
  std::vector<QuorumServer> servers;
  int quorum = 0;
};

// How a replicated or sharded deployment stands.
using DeploymentState = std::variant<SentinelDeploymentState,
                                     ClusterDeploymentState,
                                     QuorumDeploymentState>;

} // namespace rlock::lock
