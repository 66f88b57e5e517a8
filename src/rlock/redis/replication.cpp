#include <rlock/redis/failure.hpp>
#include <rlock/redis/replication.hpp>

#include <algorithm>

namespace rlock::redis {

Role
role_of(Connection& connection) {
  const auto reply = connection.command({"ROLE"});
  if (reply.is_error()) {
    throw_server_error("cannot ask " + connection.address() + " for its ROLE",
                       reply.text);
  }
  if (!reply.is_array() || reply.elements.empty()
      || reply.elements.front().text.empty()) {
    throw Failure(FailureKind::unexpected_reply,
                  "unexpected reply to ROLE from " + connection.address());
  }
  Role role;
  role.name = reply.elements.front().text;
  if (role.name == "master" && reply.elements.size() >= 3
      && reply.elements[2].is_array()) {
    role.replicas = static_cast<int>(reply.elements[2].elements.size());
  }
  return role;
}

int
wait_for_replicas(Connection& connection, int replicas, Duration timeout) {
  const auto ms = std::max<long long>(
      1, std::chrono::ceil<std::chrono::milliseconds>(timeout).count());
  const auto reply = connection.command(
      {"WAIT", std::to_string(replicas), std::to_string(ms)});
  return static_cast<int>(integer_of(
      reply, "cannot wait for the replicas of " + connection.address()));
}

} // namespace rlock::redis
