#pragma once

#include <rlock/util/expected.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::redis {

class PasswordSource; // redis/password_source.hpp

// Where a Redis server is and how to log in to it.
struct Endpoint {
  std::string host; // empty for a unix socket
  int port = 6379;
  std::string socket_path; // empty for TCP
  int db = 0;
  std::string user;     // ACL user, empty for the default user
  std::string password; // empty for no AUTH
  bool tls = false;     // rediss://
  // The URL's login was one word without a colon (redis://word@host):
  // `password` holds it, as redis-cli reads it; a password given another way
  // makes it the user instead.
  bool login_one_word = false;
  // A password that changes (--password-command): when set, the login's
  // password comes from it and `password` is empty. Shared by every copy.
  std::shared_ptr<PasswordSource> password_source;

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

// Returns `url` with any password replaced by "***", for messages: the
// userinfo's (up to the last '@' outside unix://, so a raw '/' in a password
// is hidden too) and the value of every query parameter but db= (other
// clients' URLs carry passwords there, e.g. ?sentinel_password=).
std::string redact_url(std::string_view url);

constexpr int k_sentinel_port = 26379;

// A node named in a URL's host list: a sentinel or a cluster seed node.
struct HostPort {
  std::string host; // IPv6 literals without the brackets
  int port = 6379;

  // Returns "host:port", an IPv6 literal in brackets, for messages.
  std::string address() const;

  bool operator==(const HostPort&) const = default;
};

// Returns the nodes' addresses joined by commas, as the URL lists them:
// "s1:26379,[::1]:26380", for messages.
std::string join_addresses(const std::vector<HostPort>& nodes);

enum class TopologyKind { single, sentinel, cluster };

// A deployment as one URL names it. db, user, password and tls are set for
// every kind; they are the data nodes' (the sentinels' password, if any, is
// given apart from the URL).
struct DeploymentUrl {
  TopologyKind kind = TopologyKind::single;
  Endpoint endpoint;           // single: the server, as parse_url reads it
  std::vector<HostPort> nodes; // sentinel: the sentinels; cluster: the seeds
  std::string master_name;     // sentinel: the master the sentinels monitor
  int db = 0;                  // always 0 for cluster
  std::string user;            // ACL user, empty for the default user
  std::string password;        // empty for no AUTH
  bool login_one_word = false; // as Endpoint::login_one_word
  bool tls = false; // rediss[+...]://: TLS to every node, sentinels too

  // Returns the endpoint of the data node at `node` (the master a sentinel
  // names, a node of the slot map) with the URL's login, database and TLS.
  Endpoint data_node(const HostPort& node) const;

  // Returns the endpoint of a sentinel: the URL's TLS, no login, database 0.
  Endpoint sentinel(const HostPort& node) const;

  // Returns what the URL names, for messages: "127.0.0.1:6379", "master
  // 'mymaster' via sentinels s1:26379,s2:26379" or "Redis Cluster via
  // n1:6379,n2:6379".
  std::string address() const;
};

// Parses what parse_url parses (kind single) and
//   redis+sentinel://[user[:password]@]host[:port][,host[:port]...]/MASTER[/DB]
//   redis+cluster://[user[:password]@]host[:port][,host[:port]...][/0]
// and their rediss+ forms (TLS). Ports default to 26379 for sentinels and
// 6379 for cluster nodes; hosts may be IPv6 literals in brackets; user,
// password and MASTER are percent-decoded. Fails with a reason that quotes
// the URL, password hidden: no master name, an empty or repeated host, a bad
// port, a DB other than 0 on a cluster, a query or fragment, a raw '@' after
// the hosts (write %40), a host list on a redis:// or rediss:// URL.
Expected<DeploymentUrl> parse_deployment_url(std::string_view url);

} // namespace rlock::redis
