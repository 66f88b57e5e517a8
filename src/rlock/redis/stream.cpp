#include <rlock/redis/failure.hpp>
#include <rlock/redis/stream.hpp>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

namespace rlock::redis {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void
fail_with(FailureKind kind, const std::string& message) {
  throw Failure(kind, message);
}

// Waits for `events` on `fd` for at most `timeout`; false when it ran out.
bool
poll_for(int fd, short events, Duration timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      return false;
    }
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, static_cast<int>(left.count()));
    if (ready > 0) {
      return true;
    }
    if (ready < 0 && errno != EINTR) {
      fail_with(FailureKind::closed,
                "poll failed: " + std::string(std::strerror(errno)));
    }
  }
}

// The error a non-blocking connect(2) on `fd` ended with (0: connected).
int
connect_error(int fd) {
  int error = 0;
  socklen_t length = sizeof error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
    return errno;
  }
  return error;
}

// Finishes a non-blocking connect(2); returns 0 or the errno it failed with.
int
await_connect(int fd, Duration timeout) {
  if (!poll_for(fd, POLLOUT, timeout)) {
    return ETIMEDOUT;
  }
  return connect_error(fd);
}

// Starts a non-blocking connect(2) of a new socket to `address`.
StartedConnect
start_socket(int family, const sockaddr* address, socklen_t length) {
  StartedConnect started;
  started.socket =
      UniqueFd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (started.socket.get() < 0) {
    started.error = errno;
    return started;
  }
  if (::connect(started.socket.get(), address, length) != 0) {
    started.error = errno;
  }
  return started;
}

// Connects a new socket to `address`; returns it, or the errno of the failure.
std::pair<UniqueFd, int>
connect_to(int family,
           const sockaddr* address,
           socklen_t length,
           Duration timeout) {
  UniqueFd socket(
      ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (socket.get() < 0) {
    return {UniqueFd(), errno};
  }
  int error = 0;
  if (::connect(socket.get(), address, length) != 0) {
    error = errno == EINPROGRESS ? await_connect(socket.get(), timeout) : errno;
  }
  if (error != 0) {
    return {UniqueFd(), error};
  }
  return {std::move(socket), 0};
}

std::string
connect_failure(int error, Duration timeout) {
  return error == ETIMEDOUT ? "no answer within " + format_seconds(timeout)
                            : std::string(std::strerror(error));
}

} // namespace

Stream::Stream(UniqueFd socket, std::string address)
    : m_socket(std::move(socket)), m_address(std::move(address)) {
}

void
Stream::write_all(std::string_view data, Duration timeout) {
  while (!data.empty()) {
    std::size_t count = 0;
    const Io io = write_some(data.data(), data.size(), count);
    if (io == Io::done) {
      data.remove_prefix(count);
    } else if (io == Io::end_of_stream) {
      fail_with(FailureKind::closed,
                "connection to " + m_address + " closed by the server");
    } else if (!wait_for(io, timeout)) {
      fail_with(FailureKind::timed_out,
                "cannot send to " + m_address + ": no progress within "
                    + format_seconds(timeout));
    }
  }
}

std::size_t
Stream::read_into(std::string& buffer, bool block, Duration timeout) {
  std::array<char, 16384> chunk{};
  std::size_t total = 0;
  for (;;) {
    std::size_t count = 0;
    const Io io = read_some(chunk.data(), chunk.size(), count);
    if (io == Io::done) {
      buffer.append(chunk.data(), count);
      total += count;
      if (count < chunk.size() && !has_buffered()) {
        return total;
      }
    } else if (io == Io::end_of_stream) {
      if (total > 0) {
        return total; // the next read reports the end
      }
      fail_with(FailureKind::closed,
                "connection to " + m_address + " closed by the server");
    } else if (total > 0 || !block) {
      return total;
    } else if (!wait_for(io, timeout)) {
      fail_with(FailureKind::timed_out,
                "no reply from " + m_address + " within "
                    + format_seconds(timeout));
    }
  }
}

bool
Stream::wait_for(Io io, Duration timeout) const {
  return poll_for(
      m_socket.get(), io == Io::want_write ? POLLOUT : POLLIN, timeout);
}

void
Stream::fail(const std::string& detail) const {
  fail_with(FailureKind::closed,
            "connection to " + m_address + " failed: " + detail);
}

Stream::Io
PlainStream::read_some(char* data, std::size_t size, std::size_t& count) {
  for (;;) {
    const ssize_t n = ::recv(fd(), data, size, 0);
    if (n > 0) {
      count = static_cast<std::size_t>(n);
      return Io::done;
    }
    if (n == 0) {
      return Io::end_of_stream;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return Io::want_read;
    }
    if (errno != EINTR) {
      fail(std::strerror(errno));
    }
  }
}

Stream::Io
PlainStream::write_some(const char* data,
                        std::size_t size,
                        std::size_t& count) {
  for (;;) {
    const ssize_t n = ::send(fd(), data, size, MSG_NOSIGNAL);
    if (n >= 0) {
      count = static_cast<std::size_t>(n);
      return Io::done;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return Io::want_write;
    }
    if (errno == EPIPE) {
      return Io::end_of_stream;
    }
    if (errno != EINTR) {
      fail(std::strerror(errno));
    }
  }
}

using AddressList = std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)>;

// Resolves host:port for a TCP connection: the addresses, or (null) why not.
AddressList
resolve_tcp(const std::string& host, int port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status =
      ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (status != 0) {
    why = status == EAI_SYSTEM ? std::strerror(errno) : ::gai_strerror(status);
    return AddressList(nullptr, &::freeaddrinfo);
  }
  return AddressList(found, &::freeaddrinfo);
}

UniqueFd
connect_tcp(const std::string& host,
            int port,
            const std::string& address,
            Duration timeout) {
  std::string why;
  const auto list = resolve_tcp(host, port, why);
  if (!list) {
    fail_with(FailureKind::refused,
              "cannot connect to " + address + ": " + why);
  }
  const addrinfo* found = list.get();
  const auto deadline = Clock::now() + timeout;
  int error = ETIMEDOUT;
  for (const addrinfo* entry = found; entry != nullptr;
       entry = entry->ai_next) {
    const auto left = deadline - Clock::now();
    if (left <= Duration::zero()) {
      error = ETIMEDOUT;
      break;
    }
    auto [socket, failure] =
        connect_to(entry->ai_family, entry->ai_addr, entry->ai_addrlen, left);
    if (failure == 0) {
      const int on = 1;
      ::setsockopt(socket.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      return std::move(socket);
    }
    error = failure;
  }
  fail_with(FailureKind::refused,
            "cannot connect to " + address + ": "
                + connect_failure(error, timeout));
}

StartedConnect
start_connect(const std::string& host, int port) {
  std::string why;
  const auto list = resolve_tcp(host, port, why);
  if (!list) {
    StartedConnect failed;
    failed.error = EINVAL;
    failed.failure = why;
    return failed;
  }
  const addrinfo* found = list.get();
  StartedConnect started;
  for (const addrinfo* entry = found; entry != nullptr;
       entry = entry->ai_next) {
    started = start_socket(entry->ai_family, entry->ai_addr, entry->ai_addrlen);
    if (started.error == 0 || started.error == EINPROGRESS) {
      break;
    }
  }
  return started;
}

StartedConnect
start_connect(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    StartedConnect failed;
    failed.error = ENAMETOOLONG;
    return failed;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return start_socket(
      AF_UNIX, reinterpret_cast<sockaddr*>(&address), sizeof address);
}

int
finish_connect(int fd) {
  const int error = connect_error(fd);
  if (error == 0) {
    const int on = 1;
    // Fails on a unix-domain socket, which needs none.
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  return error;
}

void
fail_connect(const std::string& address, int error, Duration timeout) {
  fail_with(FailureKind::refused,
            "cannot connect to " + address + ": "
                + connect_failure(error, timeout));
}

UniqueFd
connect_unix(const std::string& path, Duration timeout) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    fail_with(FailureKind::bad_address,
              "cannot connect to " + path + ": the path is too long");
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  auto [socket, failure] = connect_to(
      AF_UNIX, reinterpret_cast<sockaddr*>(&address), sizeof address, timeout);
  if (failure != 0) {
    fail_with(FailureKind::refused,
              "cannot connect to " + path + ": "
                  + connect_failure(failure, timeout));
  }
  return std::move(socket);
}

} // namespace rlock::redis
