#pragma once

#include <rlock/redis/connection.hpp>

#include <string>

namespace rlock::redis {

// What ROLE says of a server.
struct Role {
  std::string name; // "master", "slave" or "sentinel"
  int replicas = 0; // a master's connected replicas
};

// Asks the server on `connection` for its ROLE. Throws Failure when the
// reply is an error or of another shape.
Role role_of(Connection& connection);

// Waits up to `timeout` (at least 1ms) until `replicas` replicas have
// acknowledged every write sent on `connection` before it (WAIT); returns
// how many did.
int wait_for_replicas(Connection& connection, int replicas, Duration timeout);

} // namespace rlock::redis
