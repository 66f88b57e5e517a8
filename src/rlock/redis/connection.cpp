#include <rlock/redis/connection.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/redis/password_source.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <strings.h>

#include <utility>

namespace rlock::redis {

namespace {

[[noreturn]] void
fail_with(FailureKind kind, const std::string& message) {
  throw Failure(kind, message);
}

// The stream over a connected socket: TLS when the URL asks for it.
std::unique_ptr<Stream>
stream_on(UniqueFd socket,
          const Endpoint& endpoint,
          const ConnectOptions& options) {
  if (endpoint.tls && !endpoint.is_unix()) {
    return start_tls(std::move(socket),
                     endpoint.host,
                     endpoint.address(),
                     options.tls,
                     options.connect_timeout);
  }
  return std::make_unique<PlainStream>(std::move(socket), endpoint.address());
}

std::unique_ptr<Stream>
connect_stream(const Endpoint& endpoint, const ConnectOptions& options) {
  if (endpoint.is_unix()) {
    return stream_on(
        connect_unix(endpoint.socket_path, options.connect_timeout),
        endpoint,
        options);
  }
  return stream_on(connect_tcp(endpoint.host,
                               endpoint.port,
                               endpoint.address(),
                               options.connect_timeout),
                   endpoint,
                   options);
}

} // namespace

Connection::Connection(std::unique_ptr<Stream> stream,
                       Endpoint endpoint,
                       const ConnectOptions& options)
    : m_stream(std::move(stream)), m_endpoint(std::move(endpoint)),
      m_password_sources(options.password_sources) {
}

Connection
Connection::open(const Endpoint& endpoint, const ConnectOptions& options) {
  Connection connection(connect_stream(endpoint, options), endpoint, options);
  connection.set_io_timeout(options.io_timeout);
  connection.log_in();
  return connection;
}

Connection
Connection::open_on(UniqueFd socket,
                    const Endpoint& endpoint,
                    const ConnectOptions& options) {
  Connection connection(
      stream_on(std::move(socket), endpoint, options), endpoint, options);
  connection.set_io_timeout(options.io_timeout);
  connection.log_in();
  return connection;
}

namespace {

// The AUTH command for `password`, with the endpoint's user.
std::vector<std::string>
auth_command(const Endpoint& endpoint, const std::string& password) {
  std::vector<std::string> auth{"AUTH"};
  if (!endpoint.user.empty()) {
    auth.push_back(endpoint.user);
  }
  auth.push_back(password);
  return auth;
}

std::string
user_part(const Endpoint& endpoint) {
  return endpoint.user.empty() ? std::string()
                               : " for user " + quote(endpoint.user);
}

// True for the commands that put a RESP2 connection in subscribed mode,
// where AUTH is refused and pushes come unasked.
bool
subscribes(const std::string& name) {
  return strcasecmp(name.c_str(), "subscribe") == 0
         || strcasecmp(name.c_str(), "psubscribe") == 0
         || strcasecmp(name.c_str(), "ssubscribe") == 0;
}

} // namespace

Reply
Connection::authenticate(const std::string& password) {
  return command(auth_command(m_endpoint, password));
}

void
Connection::log_in() {
  std::optional<Reply> refused;
  if (const auto& source = m_endpoint.password_source) {
    PasswordSource::Password password;
    try {
      password = source->current();
    } catch (const Failure& failure) {
      fail_with(FailureKind::auth_refused,
                "cannot log in to " + address() + ": " + failure.what());
    }
    // Set first: this AUTH is the login, not one to send again before it.
    m_login_generation = password.generation;
    auto reply = authenticate(password.value);
    if (reply.is_error()) {
      // Kept a while, it may have been rotated since: a new one, once.
      if (const auto newer = source->after_refusal(password.generation)) {
        m_login_generation = newer->generation;
        reply = authenticate(newer->value);
      }
    }
    if (reply.is_error()) {
      refused = std::move(reply);
    }
  } else if (!m_endpoint.password.empty()) {
    auto reply = authenticate(m_endpoint.password);
    if (reply.is_error()) {
      refused = std::move(reply);
    }
  }
  if (refused) {
    fail_with(FailureKind::auth_refused,
              "Redis at " + address() + " refused the password"
                  + user_part(m_endpoint) + ": " + printable(refused->text));
  }
  if (m_endpoint.db != 0) {
    throw_if_error(command({"SELECT", std::to_string(m_endpoint.db)}),
                   "cannot select database " + std::to_string(m_endpoint.db)
                       + " on " + address());
  }
}

// Sends AUTH with a newer password ahead of the commands about to go out,
// when one was kept since this connection logged in and its reply cannot be
// mistaken for another's: nothing outstanding, not subscribed.
void
Connection::log_in_again_if_due() {
  const auto& source = m_endpoint.password_source;
  if (!source || m_subscribed || m_login_reply_pending || m_replies_due != 0
      || source->generation() == m_login_generation) {
    return;
  }
  const auto password = source->kept();
  if (!password || password->generation == m_login_generation) {
    return;
  }
  m_output.insert(0, format_command(auth_command(m_endpoint, password->value)));
  m_login_generation = password->generation;
  m_login_reply_pending = true;
  ++m_replies_due;
}

// The reply to the AUTH log_in_again_if_due() sent: a refusal is said once
// (this generation is not tried again), and the connection goes on logged
// in as before.
void
Connection::take_login_reply(const Reply& reply) {
  if (reply.is_error()) {
    log::warning("Redis at " + address() + " refused the new password"
                 + user_part(m_endpoint) + ": " + printable(reply.text)
                 + "; the connection stays logged in as before");
  }
}

Reply
Connection::command(const std::vector<std::string>& args) {
  if (m_asking) {
    append({"ASKING"});
  }
  append(args);
  if (m_asking) {
    auto asking = read_reply();
    auto reply = read_reply();
    throw_if_error(asking, "ASKING on " + address());
    return reply;
  }
  return read_reply();
}

void
Connection::set_asking(bool asking) {
  m_asking = asking;
}

void
Connection::append(const std::vector<std::string>& args) {
  m_output += format_command(args);
  ++m_unsent;
  if (!args.empty() && subscribes(args.front())) {
    m_subscribed = true;
  }
}

Reply
Connection::read_reply() {
  flush();
  for (;;) {
    if (auto reply = take_parsed_reply()) {
      if (m_aside_pending == 0) {
        return std::move(*reply);
      }
      --m_aside_pending;
      m_aside.push_back(std::move(*reply));
      continue;
    }
    read_more(true);
  }
}

void
Connection::append_aside(const std::vector<std::string>& args) {
  if (m_aside_pending == 0) {
    m_aside.clear();
  }
  append(args);
  ++m_aside_pending;
}

std::optional<Reply>
Connection::take_aside_reply() {
  if (m_aside.empty()) {
    return std::nullopt;
  }
  Reply reply = std::move(m_aside.front());
  m_aside.pop_front();
  return reply;
}

std::optional<BootTime>
Connection::server_started() const {
  return m_server_started;
}

void
Connection::set_server_started(BootTime started) {
  m_server_started = started;
}

std::optional<Reply>
Connection::take_arrived_reply(bool read_socket) {
  if (read_socket) {
    read_more(false);
  }
  return take_parsed_reply();
}

void
Connection::send() {
  flush();
}

void
Connection::flush() {
  if (!m_output.empty()) {
    log_in_again_if_due();
    m_replies_due += std::exchange(m_unsent, 0);
    const std::string output = std::exchange(m_output, {});
    m_stream->write_all(output, m_io_timeout);
  }
}

void
Connection::read_more(bool block) {
  m_input.clear();
  m_stream->read_into(m_input, block, m_io_timeout);
  try {
    m_reader.feed(m_input);
  } catch (const ReplyTooLarge& error) {
    throw Failure(FailureKind::not_redis,
                  "reply from " + address() + " too large: " + error.what());
  } catch (const ProtocolError& error) {
    throw Failure(FailureKind::not_redis,
                  address() + " does not speak the Redis protocol ("
                      + error.what() + ")");
  }
}

std::optional<Reply>
Connection::take_parsed_reply() {
  try {
    auto reply = m_reader.next();
    if (reply && m_replies_due > 0) {
      --m_replies_due;
    }
    if (reply && m_login_reply_pending) {
      m_login_reply_pending = false;
      take_login_reply(*reply);
      return take_parsed_reply();
    }
    // An error reply carries where a password can be given, for
    // throw_if_error() to word a refusal for want of one.
    if (reply && reply->is_error()) {
      reply->password_sources = m_password_sources;
    }
    return reply;
  } catch (const ProtocolError& error) {
    throw Failure(FailureKind::not_redis,
                  address() + " does not speak the Redis protocol ("
                      + error.what() + ")");
  }
}

int
Connection::fd() const {
  return m_stream->fd();
}

void
Connection::set_io_timeout(Duration timeout) {
  m_io_timeout = timeout;
}

Duration
Connection::io_timeout() const {
  return m_io_timeout;
}

std::string
Connection::address() const {
  return m_endpoint.address();
}

void
throw_if_error(const Reply& reply, const std::string& what) {
  if (reply.is_error()) {
    // Printable: a server's text must not forge lines on a terminal.
    const std::string error = printable(reply.text);
    // An unauthenticated client's large command is refused as a protocol
    // error before any NOAUTH.
    if (error.starts_with("NOAUTH")
        || error.find("Protocol error: unauthenticated") != std::string::npos) {
      fail_with(FailureKind::auth_refused,
                what + ": the server wants a password (give it with "
                    + (reply.password_sources.empty()
                           ? std::string("a password file, the environment "
                                         "or the URL")
                           : reply.password_sources)
                    + "): " + error);
    }
    throw_server_error(what, error);
  }
}

} // namespace rlock::redis
