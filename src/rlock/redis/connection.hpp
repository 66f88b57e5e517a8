#pragma once

#include <rlock/redis/reply.hpp>
#include <rlock/redis/reply_reader.hpp>
#include <rlock/redis/stream.hpp>
#include <rlock/redis/tls.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/duration.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rlock::redis {

struct ConnectOptions {
  Duration connect_timeout = std::chrono::seconds(2);
  Duration io_timeout = std::chrono::seconds(5);
  TlsOptions tls; // for rediss:// URLs
  // Where a password can be given, for the message that says the server
  // wants one (cli/ names its options); "" for a wording that names none.
  std::string password_sources;
};

// One connection to one server, plain or TLS, speaking RESP2 (hiredis's
// parser; the socket and TLS are rlock's own). Every call is bounded by a
// timeout. Not thread-safe: each thread opens its own. The socket is
// close-on-exec, so children never inherit it.
//
// With a password that changes (Endpoint::password_source), the commands
// sent next after a newer password was kept go out behind an AUTH with it,
// in the same round trip, when no reply is outstanding: a live connection
// stays logged in across a rotation. A refused AUTH is reported once (a
// warning) and the connection goes on logged in as before.
class Connection {
public:
  // Connects, logs in and selects the database. Throws Error (unavailable)
  // naming the address and the reason when any step fails.
  static Connection open(const Endpoint& endpoint,
                         const ConnectOptions& options);

  // The same on `socket`, connected to `endpoint` already (dial_all()):
  // TLS, login and database, bounded by `options`.
  static Connection open_on(UniqueFd socket,
                            const Endpoint& endpoint,
                            const ConnectOptions& options);

  // Sends one command and returns its reply, an error reply included. Throws
  // Error (unavailable) when the connection fails or the reply times out; the
  // connection is unusable after that.
  Reply command(const std::vector<std::string>& args);

  // While on, command() sends ASKING before each command, in the same
  // round trip: a Cluster slot being imported by this node answers a
  // client only for the command right after an ASKING, and a step may send
  // several (INFO, EVALSHA, then EVAL, WAIT).
  void set_asking(bool asking);

  // Queues a command for a pipeline; read the replies with read_reply().
  void append(const std::vector<std::string>& args);

  // Returns the next reply of a pipeline. Throws as command() does.
  Reply read_reply();

  // Sends the commands appended so far without reading any reply, for a
  // caller that waits on several connections at once (exchange_all()).
  // Throws as command() does.
  void send();

  // Queues a command that goes out with the next one, its reply kept for
  // take_aside_reply() instead of being returned by read_reply(): a question
  // that rides along without a round trip of its own. Only with no reply
  // pending; several may go out together.
  void append_aside(const std::vector<std::string>& args);

  // Returns the replies to the last append_aside() calls, one per call in
  // their order, once read_reply() met them; nothing when none is left.
  std::optional<Reply> take_aside_reply();

  // The latest instant, by our clock, at which the server can have started,
  // as the restart grace counts it (lock/restart_grace.hpp), once learned on
  // this connection (a restart ends the connection, so it holds for the
  // connection's life); nothing until then.
  std::optional<BootTime> server_started() const;
  void set_server_started(BootTime started);

  // Returns a reply that has fully arrived, without blocking: first reads
  // what the socket holds when `read_socket`, then takes one buffered reply.
  // Nothing when no reply is complete. Throws as command() does.
  std::optional<Reply> take_arrived_reply(bool read_socket);

  // Returns the socket, to wait on with poll(2).
  int fd() const;

  // Sets how long any one reply may take from now on.
  void set_io_timeout(Duration timeout);
  Duration io_timeout() const;

  // Returns the server's address, for messages.
  std::string address() const;

private:
  Connection(std::unique_ptr<Stream> stream,
             Endpoint endpoint,
             const ConnectOptions& options);

  void log_in();
  Reply authenticate(const std::string& password);
  void log_in_again_if_due();
  void take_login_reply(const Reply& reply);
  void flush();
  void read_more(bool block);
  std::optional<Reply> take_parsed_reply();

  std::unique_ptr<Stream> m_stream;
  ReplyReader m_reader;
  std::string m_output; // commands appended, not yet sent
  std::string m_input;  // bytes read, not yet given to m_reader
  Endpoint m_endpoint;
  Duration m_io_timeout{};
  int m_aside_pending = 0; // replies to set aside before the next one
  bool m_asking = false;
  std::deque<Reply> m_aside;
  std::optional<BootTime> m_server_started;
  std::string m_password_sources; // ConnectOptions::password_sources
  // A password that changes (Endpoint::password_source): the generation
  // this connection logged in with last, or tried to.
  std::uint64_t m_login_generation = 0;
  bool m_login_reply_pending = false; // an AUTH sent before the next reply
  bool m_subscribed = false;          // (P|S)SUBSCRIBE sent: no AUTH again
  std::size_t m_unsent = 0;           // commands appended, not yet sent
  std::size_t m_replies_due = 0;      // replies to commands sent, not taken
};

} // namespace rlock::redis
