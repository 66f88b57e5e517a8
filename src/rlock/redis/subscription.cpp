#include <rlock/redis/failure.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/util/error.hpp>

#include <poll.h>

namespace rlock::redis {

namespace {

bool
is_push(const Reply& reply, std::string_view kind) {
  return reply.is_array() && !reply.elements.empty()
         && reply.elements[0].is_string() && reply.elements[0].text == kind;
}

bool
socket_readable(int fd) {
  pollfd entry{fd, POLLIN, 0};
  return ::poll(&entry, 1, 0) > 0;
}

} // namespace

Subscription::Subscription(Connection connection)
    : m_connection(std::move(connection)) {
}

Subscription
Subscription::open(const Endpoint& endpoint,
                   const ConnectOptions& options,
                   const std::vector<std::string>& channels) {
  auto connection = Connection::open(endpoint, options);
  std::vector<std::string> command{"SUBSCRIBE"};
  command.insert(command.end(), channels.begin(), channels.end());
  connection.append(command);
  for (std::size_t i = 0; i < channels.size(); ++i) {
    check_subscribed(connection.read_reply(), connection.address());
  }
  return Subscription(std::move(connection));
}

int
Subscription::fd() const {
  return m_connection.fd();
}

int
Subscription::take_messages() {
  int messages = 0;
  bool read_socket = socket_readable(m_connection.fd());
  while (auto reply = m_connection.take_arrived_reply(read_socket)) {
    read_socket = false;
    messages += is_message(*reply) ? 1 : 0;
  }
  return messages;
}

void
check_subscribed(const Reply& reply, const std::string& address) {
  throw_if_error(reply, "cannot subscribe on " + address);
  if (!is_push(reply, "subscribe")) {
    throw Failure(FailureKind::unexpected_reply,
                  "unexpected reply to SUBSCRIBE from " + address);
  }
}

bool
is_message(const Reply& reply) {
  return is_push(reply, "message");
}

} // namespace rlock::redis
