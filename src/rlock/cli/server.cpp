// Where the locks live: the URL(s), login, TLS, prefix and timeouts, parsed
// once into the lock::Deployment the stores take, and the store opened on
// it.

#include <rlock/cli/raw_options.hpp>
#include <rlock/cli/server.hpp>
#include <rlock/proc/command_output.hpp>
#include <rlock/redis/password_source.hpp>
#include <rlock/store/open_store.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace rlock::cli {

namespace detail {

lock::RestartGrace
restart_grace_of(const RawOptions& raw, const Environment& environment) {
  const std::string name = "--restart-grace";
  if (raw.restart_grace) {
    return {duration_of(*raw.restart_grace, name, true), name};
  }
  if (environment.restart_grace) {
    return {
        duration_of(*environment.restart_grace, "RLOCK_RESTART_GRACE", true),
        name};
  }
  return {defaults::k_restart_grace, name};
}

namespace {

// Returns the first line of a password file given with `option`, without
// its line end.
std::string
read_password_file(const std::string& path, const std::string& option) {
  std::ifstream file(path);
  if (!file) {
    throw_usage(option + ": cannot read " + quote(path) + ": "
                + std::strerror(errno));
  }
  std::string line;
  std::getline(file, line);
  if (line.ends_with('\r')) {
    line.pop_back();
  }
  if (line.empty()) {
    throw_usage(option + ": " + quote(path)
                + " is empty (the password is its first line)");
  }
  return line;
}

// Where the data nodes' password comes from, decided once for every URL.
struct Login {
  // A password that changes, fetched by a command; or one given.
  std::shared_ptr<redis::PasswordSource> command;
  std::optional<std::string> given;
  // Given with an option: it beats a password in the URL (which
  // --password-command refuses).
  bool on_command_line = false;
};

// Returns the password source of the shell command `command`: its first
// line of output, the command killed after a while; `name` (the option or
// variable) heads the reason it gives none.
std::shared_ptr<redis::PasswordSource>
password_command(const std::string& command,
                 const std::string& name,
                 Duration refresh) {
  auto fetch = [command, name](int cancel_fd) -> Expected<std::string> {
    auto line = proc::first_line_of(
        command, defaults::k_password_command_timeout, cancel_fd);
    if (!line) {
      return Expected<std::string>::failure(name + ": " + line.error());
    }
    return line;
  };
  return std::make_shared<redis::PasswordSource>(std::move(fetch), refresh);
}

// Returns --password-refresh, else the default; given, it needs a command.
Duration
password_refresh_of(const RawOptions& raw, bool with_command) {
  const std::string option = "--password-refresh";
  if (!raw.password_refresh) {
    return defaults::k_password_refresh;
  }
  const auto refresh = duration_of(*raw.password_refresh, option, false);
  if (!with_command) {
    throw_usage(option
                + " needs --password-command (or $RLOCK_PASSWORD_COMMAND)");
  }
  if (refresh < defaults::k_min_password_refresh) {
    throw_usage(option + ": must be at least "
                + defaults::help_text(defaults::k_min_password_refresh)
                + ", got " + quote(*raw.password_refresh));
  }
  return refresh;
}

// Returns the login of the data nodes: --password-command or
// --password-file (not both), else the environment's: $RLOCK_PASSWORD_COMMAND
// or $RLOCK_PASSWORD (not both), else $REDISCLI_AUTH. A password in a URL
// comes between the options and the environment (set_login).
Login
login_of(const RawOptions& raw, const Environment& environment) {
  if (raw.password_command && raw.password_file) {
    throw_usage("--password-command and --password-file: give the "
                "password one way");
  }
  if (raw.password_command && raw.password_command->empty()) {
    throw_usage("--password-command: must not be empty");
  }
  const bool env_command = !raw.password_command && !raw.password_file
                           && environment.rlock_password_command.has_value();
  if (env_command && environment.rlock_password) {
    throw_usage("RLOCK_PASSWORD_COMMAND and RLOCK_PASSWORD are both set: "
                "give the password one way");
  }
  const Duration refresh =
      password_refresh_of(raw, raw.password_command || env_command);
  Login login;
  login.on_command_line = raw.password_command || raw.password_file;
  if (raw.password_command) {
    login.command =
        password_command(*raw.password_command, "--password-command", refresh);
  } else if (raw.password_file) {
    login.given = read_password_file(*raw.password_file, "--password-file");
  } else if (env_command) {
    login.command = password_command(
        *environment.rlock_password_command, "RLOCK_PASSWORD_COMMAND", refresh);
  } else if (environment.rlock_password) {
    login.given = environment.rlock_password;
  } else if (environment.rediscli_auth) {
    login.given = environment.rediscli_auth;
  }
  return login;
}

// Sets `endpoint`'s login: an option's password beats the URL's, which
// beats the environment's; --password-command and a password in the URL
// (`url_option`'s) are refused together. A URL's login of one word
// (redis://word@host) is the password, as redis-cli reads it, unless a
// password comes from elsewhere: then it is the user.
void
set_login(const Login& login,
          const std::string& url_option,
          redis::Endpoint& endpoint) {
  const bool elsewhere = login.command || login.given;
  if (endpoint.login_one_word) {
    if (!elsewhere) {
      return;
    }
    endpoint.user = std::exchange(endpoint.password, {});
  } else if (!endpoint.password.empty()) {
    if (login.command && login.on_command_line) {
      throw_usage("--password-command: not with a password in the URL ("
                  + url_option + "); give the password one way");
    }
    if (!login.on_command_line) {
      return;
    }
  }
  if (login.command) {
    endpoint.password.clear();
    endpoint.password_source = login.command;
  } else if (login.given) {
    endpoint.password = *login.given;
  }
}

// Returns `path` when it names a file that can be read.
std::string
readable_file(const std::optional<std::string>& path,
              const std::string& option) {
  if (!path) {
    return {};
  }
  if (::access(path->c_str(), R_OK) != 0) {
    throw_usage(option + ": cannot read " + quote(*path) + ": "
                + std::strerror(errno));
  }
  return *path;
}

// Returns the TLS settings; `over_tls`: a server of the deployment is reached
// over TLS (the options need one).
redis::TlsOptions
tls_options_of(const RawOptions& raw,
               bool over_tls,
               const std::string& url_source) {
  const std::pair<const char*, bool> given[] = {
      {"--tls-ca", raw.tls_ca.has_value()},
      {"--tls-cert", raw.tls_cert.has_value()},
      {"--tls-key", raw.tls_key.has_value()},
      {"--tls-server-name", raw.tls_server_name.has_value()},
      {"--tls-insecure", raw.tls_insecure}};
  for (const auto& [option, present] : given) {
    if (present && !over_tls) {
      throw_usage(std::string(option) + " needs a rediss:// URL (" + url_source
                  + " is not one)");
    }
  }
  if (raw.tls_cert.has_value() != raw.tls_key.has_value()) {
    throw_usage(raw.tls_cert ? "--tls-cert needs --tls-key"
                             : "--tls-key needs --tls-cert");
  }
  if (raw.tls_server_name && raw.tls_server_name->empty()) {
    throw_usage("--tls-server-name: must not be empty");
  }
  redis::TlsOptions tls;
  tls.ca_file = readable_file(raw.tls_ca, "--tls-ca");
  tls.cert_file = readable_file(raw.tls_cert, "--tls-cert");
  tls.key_file = readable_file(raw.tls_key, "--tls-key");
  tls.server_name = raw.tls_server_name.value_or("");
  tls.insecure = raw.tls_insecure;
  tls.names = {"--tls-ca", "--tls-cert", "--tls-key"};
  return tls;
}

// Returns --replicas (else $RLOCK_REPLICAS): a count, all or auto; by
// default a fixed count with Sentinel and Cluster (it fails closed where
// auto would ask for nothing), else 0.
lock::ReplicaPolicy
replica_policy_of(const RawOptions& raw,
                  const Environment& environment,
                  bool replicated) {
  using Mode = lock::ReplicaPolicy::Mode;
  lock::ReplicaPolicy policy;
  policy.mode = Mode::count;
  policy.count = replicated ? defaults::k_replicated_replicas : 0;
  policy.timeout = duration_or(raw.replicas_timeout,
                               defaults::k_replicas_timeout,
                               "--replicas-timeout",
                               false);
  const auto& text = raw.replicas ? raw.replicas : environment.replicas;
  if (!text) {
    return policy;
  }
  const std::string option = raw.replicas ? "--replicas" : "RLOCK_REPLICAS";
  if (*text == "auto") {
    policy.mode = Mode::automatic;
    return policy;
  }
  if (*text == "all") {
    policy.mode = Mode::all;
    return policy;
  }
  const auto count = parse_integer(*text, 0, 1000);
  if (!count) {
    throw_usage(option + ": must be a number of replicas (0..1000), all or "
                + "auto, got " + quote(*text));
  }
  policy.mode = Mode::count;
  policy.count = static_cast<int>(*count);
  return policy;
}

// Returns the sentinels' password: --sentinel-password-file, else
// $RLOCK_SENTINEL_PASSWORD, else none.
std::string
sentinel_password_of(const RawOptions& raw, const Environment& environment) {
  if (raw.sentinel_password_file) {
    return read_password_file(*raw.sentinel_password_file,
                              "--sentinel-password-file");
  }
  return environment.sentinel_password.value_or("");
}

// Returns the sentinels of a redis+sentinel:// URL, each with their own
// password, and the data nodes' login.
redis::SentinelMaster
sentinel_master_of(const redis::DeploymentUrl& url,
                   const std::string& sentinel_password,
                   const redis::Endpoint& data_node) {
  redis::SentinelMaster master;
  for (const auto& node : url.nodes) {
    auto sentinel = url.sentinel(node);
    sentinel.password = sentinel_password;
    master.sentinels.push_back(sentinel);
  }
  master.name = url.master_name;
  master.data_node = data_node;
  return master;
}

// The URLs named, and where they came from: every --url, else $RLOCK_URL
// (several separated by spaces), else $REDIS_URL, else the default.
struct UrlList {
  std::vector<std::string> urls;
  std::string option;
};

UrlList
urls_of(const RawOptions& raw, const Environment& environment) {
  if (!raw.urls.empty()) {
    return {raw.urls, "--url"};
  }
  if (environment.rlock_url) {
    UrlList list{{}, "RLOCK_URL"};
    std::istringstream words(*environment.rlock_url);
    for (std::string url; words >> url;) {
      list.urls.push_back(url);
    }
    if (list.urls.empty()) {
      list.urls.push_back(*environment.rlock_url);
    }
    return list;
  }
  if (environment.redis_url) {
    return {{*environment.redis_url}, "REDIS_URL"};
  }
  return {{std::string(defaults::k_url)}, "--url"};
}

// Returns the one server, Sentinel master or Cluster `url` names, with its
// login (set_login). A Cluster's seeds are checked by the caller.
lock::Topology
topology_of(const redis::DeploymentUrl& url,
            const Login& login,
            const std::string& url_option,
            const RawOptions& raw,
            const Environment& environment) {
  using Kind = redis::TopologyKind;
  auto endpoint = url.kind == Kind::single ? url.endpoint
                                           : url.data_node(redis::HostPort{});
  set_login(login, url_option, endpoint);
  switch (url.kind) {
  case Kind::sentinel:
    return lock::Sentinel{sentinel_master_of(
        url, sentinel_password_of(raw, environment), endpoint)};
  case Kind::cluster:
    return lock::Cluster{redis::ClusterSeeds{url.nodes, endpoint}};
  case Kind::single:
    break;
  }
  return lock::Single{endpoint};
}

// A member of a quorum: one server or a Sentinel master, with its login.
lock::QuorumMember
member_of(const redis::DeploymentUrl& url,
          const Login& login,
          const std::string& url_option,
          const RawOptions& raw,
          const Environment& environment) {
  const bool sentinel = url.kind == redis::TopologyKind::sentinel;
  auto where = topology_of(url, login, url_option, raw, environment);
  auto replicas = replica_policy_of(raw, environment, sentinel);
  if (sentinel) {
    return {.where = std::get<lock::Sentinel>(std::move(where)),
            .replicas = replicas};
  }
  return {.where = std::get<lock::Single>(std::move(where)),
          .replicas = replicas};
}

// Returns --quorum, else a majority of `servers`.
int
quorum_of(const RawOptions& raw, int servers) {
  if (!raw.quorum) {
    return servers / 2 + 1;
  }
  if (servers < 2) {
    throw_usage("--quorum: needs several --url (a quorum of servers)");
  }
  const auto& text = *raw.quorum;
  const auto quorum = parse_integer(text, servers / 2 + 1, servers);
  if (!quorum) {
    throw_usage("--quorum: must be a majority of the " + std::to_string(servers)
                + " servers (" + std::to_string(servers / 2 + 1) + ".."
                + std::to_string(servers) + "), got " + quote(text));
  }
  return static_cast<int>(*quorum);
}

// Returns the quorum of independent masters (Redlock) `parsed` names.
lock::Quorum
quorum_of(const UrlList& list,
          const std::vector<redis::DeploymentUrl>& parsed,
          const Login& login,
          const RawOptions& raw,
          const Environment& environment) {
  const int count = static_cast<int>(parsed.size());
  if (count < 3) {
    throw_usage(list.option + ": a quorum needs at least 3 servers, got "
                + std::to_string(count));
  }
  lock::Quorum quorum;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    const auto& url = parsed[i];
    if (url.kind == redis::TopologyKind::cluster) {
      throw_usage(list.option + ": a Redis Cluster cannot be one of a "
                  + "quorum's servers (it is one deployment), got "
                  + quote(redis::redact_url(list.urls[i])));
    }
    if (!seen.insert(url.address()).second) {
      throw_usage(list.option + ": " + quote(redis::redact_url(list.urls[i]))
                  + " is named twice (a quorum needs independent servers)");
    }
    quorum.members.push_back(
        member_of(url, login, list.option, raw, environment));
  }
  if (raw.fair) {
    throw_usage("--fair: not with several --url (each server's queue has "
                "its own order, and no order is common to a quorum)");
  }
  quorum.quorum = quorum_of(raw, count);
  if (count % 2 == 0) {
    log::warning(std::to_string(count) + " servers: a quorum of "
                 + std::to_string(quorum.quorum) + " survives no more failed "
                 + "servers than " + std::to_string(count - 1)
                 + " would; an odd number is better");
  }
  return quorum;
}

// True when any server of `topology` is reached over TLS (rediss://).
bool
uses_tls(const lock::Topology& topology) {
  const auto tls = [](const auto& where) {
    using Where = std::decay_t<decltype(where)>;
    if constexpr (std::is_same_v<Where, lock::Single>) {
      return where.endpoint.tls;
    } else if constexpr (std::is_same_v<Where, lock::Sentinel>) {
      return where.master.data_node.tls;
    } else if constexpr (std::is_same_v<Where, lock::Cluster>) {
      return where.seeds.data_node.tls;
    } else {
      return false;
    }
  };
  if (const auto* quorum = std::get_if<lock::Quorum>(&topology)) {
    for (const auto& member : quorum->members) {
      if (std::visit(tls, member.where)) {
        return true;
      }
    }
    return false;
  }
  return std::visit(tls, topology);
}

} // namespace

lock::Deployment
server_of(const RawOptions& raw, const Environment& environment) {
  const auto list = urls_of(raw, environment);
  const std::string& option = list.option;
  std::vector<redis::DeploymentUrl> parsed;
  for (const auto& url : list.urls) {
    parsed.push_back(
        value_or_usage_error(redis::parse_deployment_url(url), option));
  }
  const Login login = login_of(raw, environment);
  std::optional<lock::Quorum> quorum;
  if (parsed.size() > 1) {
    quorum = quorum_of(list, parsed, login, raw, environment);
  } else {
    quorum_of(raw, 1);
  }
  // The first URL's settings stand for what all the servers of a quorum
  // share (its replica policy is the one doctor reports).
  const auto& first = parsed.front();
  using Kind = redis::TopologyKind;
  auto topology = topology_of(first, login, option, raw, environment);
  if (first.kind != Kind::sentinel && raw.sentinel_password_file) {
    throw_usage("--sentinel-password-file needs a redis+sentinel:// URL ("
                + option + " is not one)");
  }
  const bool cluster = first.kind == Kind::cluster;
  // Not inside the initializer below: GCC 12 destroys its members twice when
  // an initializer throws (a double free).
  auto replicas =
      replica_policy_of(raw, environment, first.kind != Kind::single);
  lock::Deployment deployment{
      .topology = std::move(topology),
      .connect = {},
      .prefix = {},
      .restart_grace = {Duration{}, "--restart-grace"},
      .replicas = replicas,
  };
  if (quorum) {
    deployment.topology = std::move(*quorum);
  }
  deployment.connect.tls =
      tls_options_of(raw, uses_tls(deployment.topology), option);
  // An empty --prefix is a prefix like any other.
  deployment.prefix = raw.prefix                 ? *raw.prefix
                      : environment.rlock_prefix ? *environment.rlock_prefix
                                                 : defaults::k_prefix;
  if (cluster && deployment.prefix.find_first_of("{}") != std::string::npos) {
    throw_usage(std::string(raw.prefix ? "--prefix" : "RLOCK_PREFIX")
                + ": must hold no brace with Redis Cluster (a brace would "
                  "split a lock's keys over slots), got "
                + quote(deployment.prefix));
  }
  deployment.connect.connect_timeout = duration_or(raw.connect_timeout,
                                                   defaults::k_connect_timeout,
                                                   "--connect-timeout",
                                                   false);
  deployment.connect.io_timeout = duration_or(
      raw.io_timeout, defaults::k_io_timeout, "--io-timeout", false);
  deployment.connect.password_sources =
      "--password-file, $RLOCK_PASSWORD or the URL";
  deployment.compat = compat_of(raw, deployment);
  return deployment;
}

} // namespace detail

std::shared_ptr<redis::PasswordSource>
password_source_of(const lock::Deployment& deployment) {
  const auto source = [](const auto& where) {
    using Where = std::decay_t<decltype(where)>;
    if constexpr (std::is_same_v<Where, lock::Single>) {
      return where.endpoint.password_source;
    } else if constexpr (std::is_same_v<Where, lock::Sentinel>) {
      return where.master.data_node.password_source;
    } else if constexpr (std::is_same_v<Where, lock::Cluster>) {
      return where.seeds.data_node.password_source;
    } else {
      return std::shared_ptr<redis::PasswordSource>();
    }
  };
  if (const auto* quorum = std::get_if<lock::Quorum>(&deployment.topology)) {
    // One source serves every server of a quorum.
    for (const auto& member : quorum->members) {
      if (auto found = std::visit(source, member.where)) {
        return found;
      }
    }
    return nullptr;
  }
  return std::visit(source, deployment.topology);
}

std::unique_ptr<lock::LockStore>
store_for(const lock::Deployment& deployment) {
  if (deployment.connect.tls.insecure) {
    log::warning("--tls-insecure: the server's certificate is not "
                 "verified; anyone on the path can pose as it");
  }
  // The password command runs once before anything else: a command that
  // fails is said at once, in its own words.
  const auto source = password_source_of(deployment);
  if (source && !source->kept()) {
    if (const auto failure = source->refresh()) {
      throw Error(ErrorKind::unavailable, *failure);
    }
  }
  return lock::open_store(deployment);
}

} // namespace rlock::cli
