#pragma once

#include <rlock/util/expected.hpp>

#include <string>
#include <string_view>

namespace rlock::redis {

// Where a Redis server is and how to log in to it.
struct Endpoint {
  std::string host; // empty for a unix socket
  int port = 6379;
  std::string socket_path; // empty for TCP
  int db = 0;
  std::string user;     // ACL user, empty for the default user
  std::string password; // empty for no AUTH
  bool tls = false;     // rediss://

  bool
  is_unix() const {
    return !socket_path.empty();
  }

  // Returns "127.0.0.1:6379", "[::1]:6380" or the socket path, for messages.
  std::string address() const;
};

// Parses redis[s]://[user[:password]@]host[:port][/db] (host may be an IPv6
// literal in brackets) and unix:///path/to.sock[?db=N]; user and password are
// percent-decoded. Fails with a reason that quotes the URL, password hidden.
Expected<Endpoint> parse_url(std::string_view url);

// Returns `url` with any password replaced by "***", for messages.
std::string redact_url(std::string_view url);

} // namespace rlock::redis
