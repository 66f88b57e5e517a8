#pragma once

#include <rlock/redis/connection.hpp>
#include <rlock/redis/replication.hpp>
#include <rlock/redis/url.hpp>

#include <map>
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

// Asks the sentinels in turn where the master is now. The first sentinel
// that names an address wins and moves to the front, so that it is asked
// first next time. Throws Failure: refused (or timed_out) when no sentinel
// answered, naming each and why; unexpected_reply when those that answered
// do not know the master.
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
