#include <rlock/redis/failure.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/util/error.hpp>

#include <poll.h>

#include <utility>

namespace rlock::redis {

namespace {

bool
is_push(const Reply& reply, std::string_view kind) {
  return reply.is_array() && !reply.elements.empty()
         && reply.elements[0].is_string() && reply.elements[0].text == kind;
}

// True for the errors with which a server ends a blocked command that
// another server is now to serve.
bool
ends_wait(std::string_view error) {
  const auto code = server_code_of(error);
  return code == "MOVED" || code == "ASK" || code == "UNBLOCKED"
         || code == "READONLY";
}

bool
socket_readable(int fd) {
  pollfd entry{fd, POLLIN, 0};
  return ::poll(&entry, 1, 0) > 0;
}

// Calls `each` with every reply that has arrived on `connection`, without
// blocking.
template <typename Each>
void
each_arrived_reply(Connection& connection, Each&& each) {
  bool read_socket = socket_readable(connection.fd());
  while (auto reply = connection.take_arrived_reply(read_socket)) {
    read_socket = false;
    each(*reply);
  }
}

} // namespace

Subscription::Subscription(Connection connection, int early_messages)
    : m_connection(std::move(connection)), m_early_messages(early_messages) {
}

Subscription
Subscription::open(const Endpoint& endpoint,
                   const ConnectOptions& options,
                   const std::vector<std::string>& channels,
                   const std::vector<std::string>& shard_channels) {
  auto connection = Connection::open(endpoint, options);
  const auto subscribe = [&](std::string verb,
                             const std::vector<std::string>& names) {
    if (!names.empty()) {
      std::vector<std::string> command{std::move(verb)};
      command.insert(command.end(), names.begin(), names.end());
      connection.append(command);
    }
  };
  // SSUBSCRIBE first: a server that does not know it says so before the
  // connection is in subscriber mode, where it would refuse it anyway.
  subscribe("SSUBSCRIBE", shard_channels);
  subscribe("SUBSCRIBE", channels);
  std::size_t shards_left = shard_channels.size();
  if (shards_left > 0) {
    const auto first = connection.read_reply();
    if (first.is_error() && is_unknown_command(first.text)) {
      shards_left = 0;
    } else {
      check_subscribed(first, connection.address(), "ssubscribe");
      --shards_left;
    }
  }
  // Once one channel is confirmed, a message may come before the next
  // confirmation: it counts as a wake-up.
  int early = 0;
  std::size_t left = channels.size();
  while (shards_left + left > 0) {
    const auto reply = connection.read_reply();
    if (is_message(reply)) {
      ++early;
    } else if (shards_left > 0) {
      check_subscribed(reply, connection.address(), "ssubscribe");
      --shards_left;
    } else {
      check_subscribed(reply, connection.address());
      --left;
    }
  }
  return Subscription(std::move(connection), early);
}

int
Subscription::fd() const {
  return m_connection.fd();
}

int
Subscription::take_messages() {
  int messages = std::exchange(m_early_messages, 0);
  each_arrived_reply(m_connection, [&](const Reply& reply) {
    messages += is_message(reply) ? 1 : 0;
  });
  return messages;
}

WakeList::WakeList(Connection connection, std::vector<std::string> lists)
    : m_connection(std::move(connection)), m_lists(std::move(lists)) {
}

WakeList
WakeList::open(const Endpoint& endpoint,
               const ConnectOptions& options,
               std::vector<std::string> lists) {
  return WakeList(Connection::open(endpoint, options), std::move(lists));
}

void
WakeList::listen() {
  if (m_listening) {
    return;
  }
  std::vector<std::string> command{"BLPOP"};
  command.insert(command.end(), m_lists.begin(), m_lists.end());
  command.emplace_back("0"); // no timeout: the waiter keeps its own time
  m_connection.append(command);
  m_connection.send();
  m_listening = true;
}

std::string
WakeList::where() const {
  std::string lists;
  for (const auto& list : m_lists) {
    lists += (lists.empty() ? "" : ", ") + list;
  }
  return lists + " at " + m_connection.address();
}

int
WakeList::fd() const {
  return m_connection.fd();
}

int
WakeList::take() {
  int popped = 0;
  each_arrived_reply(m_connection, [&](const Reply& reply) {
    popped += popped_by(reply, where());
    m_listening = false;
  });
  return popped;
}

void
check_subscribed(const Reply& reply,
                 const std::string& address,
                 std::string_view kind) {
  throw_if_error(reply, "cannot subscribe on " + address);
  if (!is_push(reply, kind)) {
    throw Failure(
        FailureKind::unexpected_reply,
        "unexpected reply to "
            + std::string(kind == "subscribe" ? "SUBSCRIBE" : "SSUBSCRIBE")
            + " from " + address);
  }
}

int
popped_by(const Reply& reply, const std::string& where) {
  if (reply.is_error() && ends_wait(reply.text)) {
    throw Failure(FailureKind::closed,
                  "the wait on " + where + " was ended: " + reply.text);
  }
  throw_if_error(reply, "cannot wait on " + where);
  return reply.is_nil() ? 0 : 1;
}

bool
is_message(const Reply& reply) {
  return is_push(reply, "message") || is_push(reply, "smessage");
}

} // namespace rlock::redis
