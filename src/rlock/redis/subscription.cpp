#include <rlock/redis/subscription.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/exit_codes.hpp>

#include <poll.h>

namespace rlock::redis {

namespace {

bool
is_push(const Reply& reply, std::string_view kind) {
  return reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1
         && reply->element[0]->type == REDIS_REPLY_STRING
         && std::string_view(reply->element[0]->str, reply->element[0]->len)
                == kind;
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
    const auto reply = connection.read_reply();
    throw_if_error(reply, "cannot subscribe on " + connection.address());
    if (!is_push(reply, "subscribe")) {
      throw Error(exit_code::k_unavailable,
                  "unexpected reply to SUBSCRIBE from " + connection.address());
    }
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
    messages += is_push(*reply, "message") ? 1 : 0;
  }
  return messages;
}

} // namespace rlock::redis
