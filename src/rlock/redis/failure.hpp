#pragma once

#include <rlock/util/error.hpp>

#include <string>
#include <string_view>

namespace rlock::redis {

// What went wrong talking to a server.
enum class FailureKind {
  refused,          // no connection: refused, unreachable, a bad address
  timed_out,        // no connection, reply or progress in time
  closed,           // the server closed the connection
  not_redis,        // the peer does not speak RESP, or its reply is too large
  auth_refused,     // the login was refused, or the server wants one
  tls_failed,       // TLS could not be set up or its handshake failed
  server_error,     // an error reply; server_code() says which
  unexpected_reply, // a reply of a shape the step does not expect
  bad_address,      // an address no connection can be made to
  not_master,       // Sentinel named a node that is not (or no longer) master
  unconfirmed,      // fewer replicas than required confirmed a write (WAIT)
};

// A failure to get a step done by a server (ErrorKind::unavailable).
class Failure : public Error {
public:
  Failure(FailureKind kind,
          const std::string& message,
          std::string server_code = {},
          std::string server_error = {})
      : Error(ErrorKind::unavailable, message), m_kind(kind),
        m_server_code(std::move(server_code)),
        m_server_error(std::move(server_error)) {
  }

  FailureKind
  failure_kind() const {
    return m_kind;
  }

  // The error reply's code (its first word: READONLY, MOVED, ASK, TRYAGAIN,
  // CLUSTERDOWN, LOADING, BUSY, MASTERDOWN, NOSCRIPT, OOM, WRONGTYPE,
  // NOAUTH, WRONGPASS, ERR...); "" unless a server_error.
  const std::string&
  server_code() const {
    return m_server_code;
  }

  // The error reply's whole text ("MOVED 3999 127.0.0.1:6381"); "" unless a
  // server_error.
  const std::string&
  server_error() const {
    return m_server_error;
  }

private:
  FailureKind m_kind;
  std::string m_server_code;
  std::string m_server_error;
};

// Returns the code of an error reply's text: its first word.
std::string server_code_of(std::string_view error);

// The one place that says whether a failure may pass: the connection could
// not be made, broke or timed out, or the server answered that it cannot
// serve yet (LOADING, BUSY, MASTERDOWN, TRYAGAIN, CLUSTERDOWN, READONLY
// during a failover, max number of clients reached), Sentinel named a node
// that is not master yet, or too few replicas confirmed a write. A waiter
// or renewer tries again on a new connection; anyone else reports it.
bool may_pass(const Failure& failure);

// True for the failures that pass on their own once a failover is over: a
// node Sentinel names that is not master yet or does not answer
// (not_master), too few replicas confirming, a cluster slot moving or a
// cluster healing (TRYAGAIN, CLUSTERDOWN). A waiter waits these out from its
// first attempt on. A first attempt that cannot connect at all (most likely
// a wrong URL), or a plain URL that points at a replica (READONLY), is
// reported at once.
bool failover_under_way(const Failure& failure);

// True for the error reply of a server that does not know the command: a
// sentinel asked for a lock, a Redis server asked as a sentinel.
bool is_unknown_command(std::string_view error);

// Throws Failure(server_error) for the error reply `error` to `what`.
[[noreturn]] void throw_server_error(const std::string& what,
                                     const std::string& error);

} // namespace rlock::redis
