#pragma once

#include <rlock/util/clock.hpp>
#include <rlock/util/fd.hpp>

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace rlock::proc {

// What rlock and its watchdog share, in a page of its own (watchdog.cpp).
struct WatchdogShared;

// What the watchdog kills when it fires.
struct WatchedRun {
  pid_t group = 0;    // the command's process group; 0 until watch_group()
  std::string marker; // an environment entry ("RLOCK_RUN_<token>=1") only
                      // this run's processes carry
};

// A small process that kills everything the command started when rlock dies
// without saying goodbye (SIGKILL, the OOM killer, a crash), or when the
// lease ends without rlock having moved the deadline on: rlock may be
// stopped (SIGSTOP) while its child runs on. It waits on a socket whose only
// other end rlock holds, and on a CLOCK_BOOTTIME timer. When it fires it
// stops, then kills, the command's group, every process in rlock's tree
// (while rlock lives) and every process whose environment carries the run's
// marker (which survives reparenting after rlock died). PR_SET_PDEATHSIG
// alone would reach only the direct child, and not a stopped parent's.
//
// The deadline and the group live in a page shared with the watchdog; the
// socket only wakes it to look. rlock never blocks on it: its sends do not
// block, and a byte that does not fit is not needed, as a full socket wakes
// the watchdog anyway, which then reads the latest deadline. A watchdog
// stopped for long (SIGSTOP) therefore costs rlock nothing, and once
// continued it fires at the deadline of now, not at one long since moved on.
class Watchdog {
public:
  // Forks the watchdog for `run`, to fire at `kill_at` unless moved on by
  // kill_at(). rlock must be single-threaded here: the watchdog allocates.
  static Watchdog start(const WatchedRun& run, BootTime kill_at);

  // Moves the moment the watchdog fires at (after a renewal).
  void kill_at(BootTime when);

  // Tells the watchdog the command's process group, once it exists: the
  // watchdog may be started before the command, which it finds meanwhile
  // in rlock's tree and by the marker.
  void watch_group(pid_t group);

  // Returns the last moment given to the watchdog to fire at.
  BootTime
  deadline() const {
    return BootTime(m_kill_at_ns);
  }

  // True once the watchdog has fired (it may still be killing).
  bool fired() const;

  // False once the watchdog has died (killed by someone else: it does not
  // exit by itself while armed): nothing then kills the run should rlock
  // stop or die. Also false once disarmed.
  bool alive() const;

  // Returns a descriptor to poll(2) with no events asked: POLLHUP comes
  // when the watchdog dies (-1 once disarmed).
  int
  death_fd() const {
    return m_channel.get();
  }

  Watchdog(Watchdog&& other) noexcept;
  Watchdog& operator=(Watchdog&&) = delete;

  // Disarms it.
  ~Watchdog();

  // Ends the watchdog without waiting on it (it may be stopped), and reaps
  // it; fired() keeps its answer.
  void disarm();

  // Returns the watchdog's pid (-1 once disarmed).
  pid_t
  pid() const {
    return m_pid;
  }

private:
  Watchdog(pid_t pid, UniqueFd channel, WatchdogShared* shared, BootTime at);

  // Has the watchdog look at the shared page again.
  void wake() const;

  pid_t m_pid = -1;
  UniqueFd m_channel;
  WatchdogShared* m_shared = nullptr; // a page shared with the watchdog
  std::int64_t m_kill_at_ns = 0;
};

} // namespace rlock::proc
