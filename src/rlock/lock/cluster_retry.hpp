#pragma once

#include <rlock/redis/failure.hpp>
#include <rlock/redis/url.hpp>

// What a step on a Redis Cluster does after a failure: the decision of the
// cluster store (lock/cluster_store.cpp) that needs no server. Pure,
// unit-tested in test_lock_cluster_retry.
namespace rlock::lock::cluster {

// Redirections and TRYAGAIN answers followed within one step.
inline constexpr int k_max_tries = 20;

// True when `failure` is a node not reached: refused, timed out or closed.
bool connection_failed(const redis::Failure& failure);

// The send of a step that failed.
struct StepTry {
  // The node it went to.
  redis::HostPort node;
  // `node` is where a MOVED or ASK pointed, not the slot's master as the
  // map (or a MOVED remembered) says.
  bool redirected = false;
  // It was sent with ASKING first (it followed an ASK).
  bool asked = false;
  // It was the step's tries-th send (1 for the first).
  int tries = 1;
  // A pause before trying again would reach the step's deadline.
  bool pause_passes_deadline = false;
};

// What to do next.
struct Retry {
  enum class Action {
    // Not the cluster's doing (or a failure after the command may have
    // run): the failure stands, the caller decides as on one server.
    give_up,
    // The slot's master did not answer: a failover under way (not_master).
    // The map is read again before the next step, asking that node last,
    // and a MOVED remembered for the slot is forgotten.
    master_down,
    // Send the step again to `target`, with ASKING first when `asking`.
    follow,
    // The slot is being migrated: wait a moment and send the step again to
    // the slot's master.
    pause,
    // Still redirected or told to wait after k_max_tries sends, or the pause
    // would pass the deadline: fail as TRYAGAIN (a migration under way).
    still_moving,
  };
  Action action = Action::give_up;
  // Where a MOVED or an ASK points (follow, and still_moving after one).
  redis::HostPort target;
  // ASK: the target serves this one command, after ASKING; the map is not
  // read again.
  bool asking = false;
  // MOVED: the target serves the slot now: it is remembered for the slot
  // and the map is read again before the next step.
  bool moved = false;
  // CLUSTERDOWN: a cluster whose maps never served every slot is not set up
  // in full, which no waiting mends (refused); else a failover under way.
  bool check_coverage = false;

  bool operator==(const Retry&) const = default;
};

// Returns what follows `failure` of the step sent as `sent`:
// - a connection that failed on the slot's master: master_down (on a node
//   a redirection pointed to: give_up);
// - TRYAGAIN, or a redirection after ASKING (the target did not take it):
//   pause;
// - ASK: follow to the node it names, sending ASKING first;
// - MOVED: follow to the node it names, and remember it;
// - anything else (CLUSTERDOWN included, after its coverage check):
//   give_up;
// - a follow or pause at the k_max_tries-th send, or a pause that would
//   pass the deadline: still_moving.
Retry retry_after(const redis::Failure& failure, const StepTry& sent);

} // namespace rlock::lock::cluster
