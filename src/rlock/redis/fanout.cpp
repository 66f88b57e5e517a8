#include <rlock/redis/fanout.hpp>
#include <rlock/redis/stream.hpp>
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

// How long to wait for more: until `deadline`, or `enough->after` once
// `done` parts succeeded; nothing when that has passed.
std::optional<int>
wait_ms(BootTime deadline,
        const std::optional<Enough>& enough,
        std::size_t done) {
  BootTime until = deadline;
  if (enough && done >= enough->count) {
    until = std::min(until, enough->after);
  }
  const Duration left = until - boot_now();
  if (left <= Duration::zero()) {
    return std::nullopt;
  }
  return static_cast<int>(
      std::chrono::ceil<std::chrono::milliseconds>(left).count());
}

} // namespace

void
exchange_all(std::vector<Exchange>& exchanges,
             BootTime deadline,
             std::optional<Enough> enough) {
  const BootTime start = boot_now();
  for (auto& exchange : exchanges) {
    send(exchange);
  }
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Exchange*> waiting;
    std::size_t done = 0;
    for (auto& exchange : exchanges) {
      if (!collect(exchange, false)) {
        fds.push_back({exchange.connection->fd(), POLLIN, 0});
        waiting.push_back(&exchange);
      } else if (!exchange.failure) {
        ++done;
      }
    }
    if (waiting.empty()) {
      return;
    }
    const auto ms = wait_ms(deadline, enough, done);
    if (!ms) {
      for (auto* exchange : waiting) {
        time_out(*exchange, boot_now() - start);
      }
      return;
    }
    const int ready = ::poll(fds.data(), fds.size(), *ms);
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

namespace {

// A dial's connect under way.
struct Pending {
  Dial* dial;
  StartedConnect started;
};

// Starts each dial's connect; those that failed at once get their failure.
std::vector<Pending>
start_all(std::vector<Dial>& dials) {
  std::vector<Pending> pending;
  for (auto& dial : dials) {
    const auto& endpoint = dial.endpoint;
    auto started = endpoint.is_unix()
                       ? start_connect(endpoint.socket_path)
                       : start_connect(endpoint.host, endpoint.port);
    if (!started.failure.empty()) {
      dial.failure = Failure(FailureKind::refused,
                             "cannot connect to " + endpoint.address() + ": "
                                 + started.failure);
    } else if (started.error != 0 && started.error != EINPROGRESS) {
      try {
        fail_connect(endpoint.address(), started.error, Duration());
      } catch (const Failure& failure) {
        dial.failure = failure;
      }
    } else {
      if (started.error == 0) {
        finish_connect(started.socket.get());
      }
      pending.push_back(Pending{&dial, std::move(started)});
    }
  }
  return pending;
}

// Logs in on the connected socket of `pending`.
void
log_in(Pending& pending, const ConnectOptions& options) {
  auto& dial = *pending.dial;
  try {
    dial.connection = Connection::open_on(
        std::move(pending.started.socket), dial.endpoint, options);
  } catch (const Failure& failure) {
    dial.failure = failure;
  }
}

} // namespace

void
dial_all(std::vector<Dial>& dials,
         const ConnectOptions& options,
         BootTime deadline,
         std::optional<Enough> enough) {
  const BootTime start = boot_now();
  auto pending = start_all(dials);
  std::vector<Pending*> connected;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Pending*> waiting;
    for (auto& p : pending) {
      if (p.started.error == 0 && p.dial->failure == std::nullopt
          && std::find(connected.begin(), connected.end(), &p)
                 == connected.end()) {
        connected.push_back(&p);
      } else if (p.started.error == EINPROGRESS) {
        fds.push_back({p.started.socket.get(), POLLOUT, 0});
        waiting.push_back(&p);
      }
    }
    const auto ms = waiting.empty()
                        ? std::nullopt
                        : wait_ms(deadline, enough, connected.size());
    if (!ms) {
      for (auto* p : waiting) {
        try {
          fail_connect(
              p->dial->endpoint.address(), ETIMEDOUT, boot_now() - start);
        } catch (const Failure& failure) {
          p->dial->failure = failure;
        }
        p->started.socket.reset();
        p->started.error = ETIMEDOUT;
      }
      break;
    }
    const int ready = ::poll(fds.data(), fds.size(), *ms);
    if (ready < 0 && errno != EINTR) {
      deadline = boot_now();
      continue;
    }
    for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) {
        continue;
      }
      auto& p = *waiting[i];
      p.started.error = finish_connect(p.started.socket.get());
      if (p.started.error != 0) {
        try {
          fail_connect(p.dial->endpoint.address(), p.started.error, Duration());
        } catch (const Failure& failure) {
          p.dial->failure = failure;
        }
      }
    }
  }
  for (auto* p : connected) {
    log_in(*p, options);
  }
}

} // namespace rlock::redis
