#include <rlock/redis/connection.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/exit_codes.hpp>
#include <rlock/util/text.hpp>

#include <fcntl.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>

namespace rlock::redis {

namespace {

timeval
to_timeval(Duration duration) {
  using namespace std::chrono;
  const auto micros = std::max<std::int64_t>(
      duration_cast<microseconds>(duration).count(), 1000);
  return timeval{static_cast<time_t>(micros / 1'000'000),
                 static_cast<suseconds_t>(micros % 1'000'000)};
}

[[noreturn]] void
unavailable(const std::string& message) {
  throw Error(exit_code::k_unavailable, message);
}

std::unique_ptr<redisContext, ContextDeleter>
connect_context(const Endpoint& endpoint, Duration timeout) {
  const auto tv = to_timeval(timeout);
  redisContext* context =
      endpoint.is_unix()
          ? redisConnectUnixWithTimeout(endpoint.socket_path.c_str(), tv)
          : redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, tv);
  if (context == nullptr) {
    unavailable("cannot connect to " + endpoint.address() + ": out of memory");
  }
  std::unique_ptr<redisContext, ContextDeleter> owned(context);
  if (context->err != 0) {
    unavailable("cannot connect to " + endpoint.address() + ": "
                + context->errstr);
  }
  if (fcntl(context->fd, F_SETFD, FD_CLOEXEC) != 0) {
    unavailable("cannot set close-on-exec on the Redis socket: "
                + std::string(std::strerror(errno)));
  }
  return owned;
}

std::vector<const char*>
argv_of(const std::vector<std::string>& args, std::vector<size_t>& lengths) {
  std::vector<const char*> argv;
  lengths.clear();
  for (const auto& arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  return argv;
}

} // namespace

Connection::Connection(std::unique_ptr<redisContext, ContextDeleter> context,
                       Endpoint endpoint)
    : m_context(std::move(context)), m_endpoint(std::move(endpoint)) {
}

Connection
Connection::open(const Endpoint& endpoint, const ConnectOptions& options) {
  Connection connection(connect_context(endpoint, options.connect_timeout),
                        endpoint);
  connection.set_io_timeout(options.io_timeout);
  connection.log_in();
  return connection;
}

void
Connection::log_in() {
  if (!m_endpoint.password.empty()) {
    std::vector<std::string> auth{"AUTH"};
    if (!m_endpoint.user.empty()) {
      auth.push_back(m_endpoint.user);
    }
    auth.push_back(m_endpoint.password);
    const auto reply = command(auth);
    if (reply->type == REDIS_REPLY_ERROR) {
      unavailable("Redis at " + address() + " refused the password"
                  + (m_endpoint.user.empty()
                         ? std::string()
                         : " for user " + quote(m_endpoint.user))
                  + ": " + reply->str);
    }
  }
  if (m_endpoint.db != 0) {
    throw_if_error(command({"SELECT", std::to_string(m_endpoint.db)}),
                   "cannot select database " + std::to_string(m_endpoint.db)
                       + " on " + address());
  }
}

Reply
Connection::command(const std::vector<std::string>& args) {
  append(args);
  return read_reply();
}

void
Connection::append(const std::vector<std::string>& args) {
  std::vector<size_t> lengths;
  auto argv = argv_of(args, lengths);
  if (redisAppendCommandArgv(m_context.get(),
                             static_cast<int>(argv.size()),
                             argv.data(),
                             lengths.data())
      != REDIS_OK) {
    throw_io_error();
  }
}

Reply
Connection::read_reply() {
  void* raw = nullptr;
  if (redisGetReply(m_context.get(), &raw) != REDIS_OK || raw == nullptr) {
    throw_io_error();
  }
  return Reply(static_cast<redisReply*>(raw));
}

std::optional<Reply>
Connection::take_arrived_reply(bool read_socket) {
  if (read_socket && redisBufferRead(m_context.get()) != REDIS_OK) {
    throw_io_error();
  }
  void* raw = nullptr;
  if (redisGetReplyFromReader(m_context.get(), &raw) != REDIS_OK) {
    throw_io_error();
  }
  if (raw == nullptr) {
    return std::nullopt;
  }
  return Reply(static_cast<redisReply*>(raw));
}

int
Connection::fd() const {
  return m_context->fd;
}

void
Connection::set_io_timeout(Duration timeout) {
  if (timeout != m_io_timeout) {
    redisSetTimeout(m_context.get(), to_timeval(timeout));
    m_io_timeout = timeout;
  }
}

std::string
Connection::address() const {
  return m_endpoint.address();
}

void
Connection::throw_io_error() const {
  const int err = m_context->err;
  const std::string detail = m_context->errstr;
  if (err == REDIS_ERR_PROTOCOL) {
    unavailable(address() + " does not speak the Redis protocol (" + detail
                + ")");
  }
  if (err == REDIS_ERR_IO && detail == std::strerror(EAGAIN)) {
    unavailable("no reply from " + address() + " within "
                + format_seconds(m_io_timeout));
  }
  if (err == REDIS_ERR_EOF) {
    unavailable("connection to " + address() + " closed by the server");
  }
  unavailable("connection to " + address() + " failed: " + detail);
}

void
throw_if_error(const Reply& reply, const std::string& what) {
  if (reply->type == REDIS_REPLY_ERROR) {
    unavailable(what + ": " + std::string(reply->str, reply->len));
  }
}

long long
integer_of(const redisReply* reply, const std::string& what) {
  if (reply->type != REDIS_REPLY_INTEGER) {
    unavailable(what + ": unexpected reply type "
                + std::to_string(reply->type));
  }
  return reply->integer;
}

std::string
string_of(const redisReply* reply, const std::string& what) {
  if (reply->type == REDIS_REPLY_NIL) {
    return {};
  }
  if (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_STATUS) {
    unavailable(what + ": unexpected reply type "
                + std::to_string(reply->type));
  }
  return std::string(reply->str, reply->len);
}

} // namespace rlock::redis
