#include <rlock/redis/fanout.hpp>
#include <rlock/util/duration.hpp>

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace rlock::redis {

namespace {

void
send(Exchange& exchange) {
  try {
    for (const auto& command : exchange.commands) {
      exchange.connection->append(command);
    }
    exchange.connection->send();
  } catch (const Failure& failure) {
    exchange.failure = failure;
  }
}

// Takes the replies that have arrived, reading the socket first when
// `read_socket`; true once the exchange is complete.
bool
collect(Exchange& exchange, bool read_socket) {
  try {
    while (!exchange.complete()) {
      auto reply = exchange.connection->take_arrived_reply(read_socket);
      read_socket = false;
      if (!reply) {
        return false;
      }
      exchange.replies.push_back(std::move(*reply));
    }
  } catch (const Failure& failure) {
    exchange.failure = failure;
  }
  return true;
}

void
time_out(Exchange& exchange, Duration waited) {
  exchange.failure = Failure(FailureKind::timed_out,
                             "no reply from " + exchange.connection->address()
                                 + " within " + format_duration(waited));
}

} // namespace

void
exchange_all(std::vector<Exchange>& exchanges, BootTime deadline) {
  const BootTime start = boot_now();
  for (auto& exchange : exchanges) {
    send(exchange);
  }
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Exchange*> waiting;
    for (auto& exchange : exchanges) {
      if (!collect(exchange, false)) {
        fds.push_back({exchange.connection->fd(), POLLIN, 0});
        waiting.push_back(&exchange);
      }
    }
    if (waiting.empty()) {
      return;
    }
    const Duration left = deadline - boot_now();
    if (left <= Duration::zero()) {
      for (auto* exchange : waiting) {
        time_out(*exchange, boot_now() - start);
      }
      return;
    }
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(ms));
    if (ready < 0 && errno != EINTR) {
      for (auto* exchange : waiting) {
        exchange->failure = Failure(FailureKind::closed,
                                    "poll failed while waiting for "
                                        + exchange->connection->address());
      }
      return;
    }
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) {
        collect(*waiting[i], true);
      }
    }
  }
}

} // namespace rlock::redis
