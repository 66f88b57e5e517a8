#pragma once

#include <rlock/redis/connection.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/url.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rlock::redis {

// A master that Redis Sentinel watches: the sentinels to ask, the name they
// know it by, and how to log in to the data nodes.
struct SentinelMaster {
  std::vector<Endpoint> sentinels; // each with the sentinels' own login
  std::string name;
  Endpoint data_node; // login, database and TLS; host and port from Sentinel
};

// Asks every sentinel at once where the master is now, and returns the one
// a majority of them names (majority_master()). Throws Failure: refused (or
// timed_out) when fewer than a majority answered, naming each that did not
// and why; not_master when those that answered do not agree (a failover
// under way); unexpected_reply when they do not know the master.
Endpoint locate_master(SentinelMaster& master, const ConnectOptions& options);

// Opens a connection to the node the sentinels name and checks with ROLE
// that it is a master. Throws as locate_master() does, and Failure
// (not_master) while the node is not a master or does not answer: a
// failover under way.
// `role`, when given, receives the ROLE answer (its replica count spares
// a caller asking again).
Connection open_master(SentinelMaster& master,
                       const ConnectOptions& options,
                       Role* role = nullptr);

// Throws Failure (not_master) unless the sentinels still name the server
// on `connection` as the master: a connection made before a failover may
// reach the old master, which goes on answering as one for a while.
void check_still_master(SentinelMaster& master,
                        const Connection& connection,
                        const ConnectOptions& options);

// Throws Failure (not_master) unless the server on `connection` says ROLE
// master.
Role check_master_role(Connection& connection);

// What one sentinel says of the master, asked by ask_sentinels().
struct SentinelView {
  std::string sentinel; // its address
  // The master it names (get-master-addr-by-name); none when it named none
  // or did not answer.
  std::optional<HostPort> master;
  std::int64_t config_epoch = -1;     // SENTINEL MASTER's; -1 when unknown
  bool failover_in_progress = false;  // a failover of the master is under way
  bool down = false;                  // it holds the master objectively down
  std::string why;                    // why it named no master
  std::optional<FailureKind> failure; // why it did not reply
};

// Returns the view one sentinel's replies give: `where` to SENTINEL
// get-master-addr-by-name, `settings` to SENTINEL MASTER.
SentinelView view_of(const std::string& sentinel,
                     const std::string& name,
                     const Reply& where,
                     const Reply& settings);

// Asks every sentinel of `master` at once for its view; each connection and
// all replies are bounded by `options` (at most a second). Never throws
// Failure: a sentinel that does not answer has `failure` set.
std::vector<SentinelView> ask_sentinels(const SentinelMaster& master,
                                        const ConnectOptions& options);

// Returns the master that a majority of the `configured` sentinels names,
// when no sentinel names another at a newer config epoch. Throws Failure as
// locate_master() does.
HostPort majority_master(const std::vector<SentinelView>& views,
                         std::size_t configured,
                         const std::string& name);

// Where the sentinels stand on a master after a write on it was confirmed.
struct MasterStanding {
  enum class Kind {
    current, // a majority answered, each names it, and no failover is under way
    elsewhere, // a majority names another master: `named`
    unsettled, // too few answered, they disagree, or a failover is under way
  };
  Kind kind = Kind::unsettled;
  std::optional<HostPort> named;
  std::string why; // unless current: what the sentinels said
};

// Returns where the `configured` sentinels that gave `views` stand on the
// master at `address` ("host:port"): a write confirmed there counts only
// when current.
MasterStanding standing_of(const std::vector<SentinelView>& views,
                           std::size_t configured,
                           const std::string& address,
                           const std::string& name);

// What one sentinel says of the master, for status and doctor.
struct SentinelReport {
  std::string address;
  std::string master; // "host:port" it names; "" when it named none
  // SENTINEL MASTER's fields (down-after-milliseconds, failover-timeout,
  // quorum, flags...); empty when refused.
  std::map<std::string, std::string> settings;
  std::string quorum_check; // SENTINEL CKQUORUM's reply, an error included
  std::string error;        // why it did not answer; "" when it did
};

// Asks every sentinel where the master is, how it watches it and whether
// it can fail it over. A sentinel that does not answer has `error` set.
std::vector<SentinelReport> survey_sentinels(const SentinelMaster& master,
                                             const ConnectOptions& options);

// Returns "127.0.0.1:26379, 127.0.0.1:26380", for messages.
std::string sentinel_addresses(const SentinelMaster& master);

} // namespace rlock::redis
