// Over 600 lines, three jobs (the shared options, their checks, the step
// options): issue #24 item 6 splits it.

#include <rlock/cli/raw_options.hpp>
#include <rlock/lock/lease.hpp>
#include <rlock/store/keys.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/text.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace rlock::cli::detail {

namespace {

// Returns the help text's "(DEFAULT)" for a duration.
std::string
shown(Duration duration) {
  return "(" + defaults::help_text(duration) + ")";
}

} // namespace

CLI::Option*
add_optional(CLI::App& app,
             const std::string& names,
             std::optional<std::string>& target,
             const std::string& help) {
  return app.add_option_function<std::string>(
      names, [&target](const std::string& value) { target = value; }, help);
}

void
add_server_options(CLI::App& app, RawOptions& raw) {
  const std::string group = "Connection";
  app.add_option_function<std::string>(
         "--url",
         [&raw](const std::string& value) { raw.urls.push_back(value); },
         "redis[s]://[user[:pass]@]host[:port][/db]\n"
         "or unix:///path.sock[?db=N]\n"
         "or redis[s]+sentinel://host[:port],.../MASTER[/db]\n"
         "or redis[s]+cluster://host[:port],...\n"
         "($RLOCK_URL, $REDIS_URL, "
             + std::string(defaults::k_url)
             + ");\ngiven 3 or more times: a quorum (Redlock)")
      ->type_name("URL")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse()
      ->group(group);
  add_optional(app,
               "--quorum",
               raw.quorum,
               "with several --url: how many must agree\n(a majority)")
      ->type_name("Q")
      ->group(group);
  add_optional(app,
               "--prefix",
               raw.prefix,
               "key prefix ($RLOCK_PREFIX, " + std::string(defaults::k_prefix)
                   + ")")
      ->type_name("P")
      ->group(group);
  add_optional(app,
               "--connect-timeout",
               raw.connect_timeout,
               "per connection attempt " + shown(defaults::k_connect_timeout))
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--io-timeout",
               raw.io_timeout,
               "per reply " + shown(defaults::k_io_timeout))
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--password-file",
               raw.password_file,
               "password: the file's first line\n"
               "(else the URL's, $RLOCK_PASSWORD, $REDISCLI_AUTH)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--sentinel-password-file",
               raw.sentinel_password_file,
               "the sentinels' password: the file's first line\n"
               "($RLOCK_SENTINEL_PASSWORD)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--replicas",
               raw.replicas,
               "N, all or auto: replicas that must confirm each\n"
               "acquire and renewal ($RLOCK_REPLICAS; "
                   + std::to_string(defaults::k_replicated_replicas)
                   + " with\nSentinel and Cluster, else 0)")
      ->type_name("N")
      ->group(group);
  add_optional(app,
               "--replicas-timeout",
               raw.replicas_timeout,
               "wait at most D for them " + shown(defaults::k_replicas_timeout))
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--tls-ca",
               raw.tls_ca,
               "rediss://: CA certificates (PEM) to verify\n"
               "the server with (the system's)")
      ->type_name("FILE")
      ->group(group);
  add_optional(
      app, "--tls-cert", raw.tls_cert, "rediss://: client certificate (PEM)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app, "--tls-key", raw.tls_key, "rediss://: its private key")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--tls-server-name",
               raw.tls_server_name,
               "rediss://: name to verify (the URL's host)")
      ->type_name("NAME")
      ->group(group);
  app.add_flag("--tls-insecure",
               raw.tls_insecure,
               "rediss://: do not verify the server (unsafe)")
      ->group(group);
}

void
add_output_options(CLI::App& app, RawOptions& raw) {
  const std::string output = "Output";
  app.add_flag("-v,--verbose", raw.verbose, "lifecycle lines on stderr")
      ->group(output);
  app.add_flag("-q,--quiet", raw.quiet, "nothing but errors on stderr")
      ->group(output);
  app.set_help_flag("-h,--help", "print this help and exit")->group(output);
}

void
add_wait_options(CLI::App& app, RawOptions& raw, bool with_nonblock) {
  const std::string waiting = "Waiting";
  if (with_nonblock) {
    app.add_flag(
           "-n,--nonblock", raw.nonblock, "fail at once if the lock is held")
        ->group(waiting);
    app.add_flag("--fair", raw.fair, "wait in line: first come, first served")
        ->group(waiting);
  }
  add_optional(app,
               "-w,--wait,--timeout",
               raw.wait,
               "give up after D; -w 0 is -n (forever)")
      ->type_name("D")
      ->group(waiting);
  add_optional(app,
               "--restart-grace",
               raw.restart_grace,
               "take no lock from a server up less than D;\n"
               "0 turns it off ($RLOCK_RESTART_GRACE, "
                   + defaults::help_text(defaults::k_restart_grace) + ")")
      ->type_name("D")
      ->group(waiting);
  add_optional(app,
               "-E,--conflict-exit-code",
               raw.conflict_exit_code,
               "exit code when not acquired, 0..255 ("
                   + std::to_string(defaults::k_conflict_exit_code) + ")")
      ->type_name("N")
      ->group(waiting);
}

void
add_version_flag(CLI::App& app, RawOptions& raw) {
  app.add_flag("-V,--version", raw.version, "print the version and exit")
      ->group("Output");
}

void
add_step_name(CLI::App& app, std::string& name) {
  // One value, so that a second word is an unexpected argument, not a new
  // NAME (valued options take their last value).
  app.add_option_function<std::string>(
         "NAME",
         [&name](const std::string& value) { name = value; },
         "the lock")
      ->type_name("")
      ->required();
}

void
add_token_option(CLI::App& app, std::string& token) {
  app.add_option("--token", token, "the holder's token ($RLOCK_TOKEN)")
      ->type_name("T")
      ->group("Locking");
}

Duration
duration_of(const std::string& text,
            const std::string& option,
            bool allow_zero) {
  const auto duration = value_or_usage_error(parse_duration(text), option);
  if (!allow_zero && duration == Duration::zero()) {
    throw_usage(option + ": must be greater than zero, got " + quote(text));
  }
  return duration;
}

std::optional<Duration>
optional_duration_of(const std::optional<std::string>& text,
                     const std::string& option,
                     bool allow_zero) {
  if (!text) {
    return std::nullopt;
  }
  return duration_of(*text, option, allow_zero);
}

Duration
duration_or(const std::optional<std::string>& text,
            Duration fallback,
            const std::string& option,
            bool allow_zero) {
  return text ? duration_of(*text, option, allow_zero) : fallback;
}

Duration
restart_grace_of(const RawOptions& raw, const Environment& environment) {
  if (raw.restart_grace) {
    return duration_of(*raw.restart_grace, "--restart-grace", true);
  }
  if (environment.restart_grace) {
    return duration_of(*environment.restart_grace, "RLOCK_RESTART_GRACE", true);
  }
  return defaults::k_restart_grace;
}

namespace {

// Returns --conflict-exit-code's value, 0..255.
int
exit_code_of(const std::string& text) {
  int value = -1;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0
      || value > 255) {
    throw_usage("--conflict-exit-code: must be an integer from 0 to 255, got "
                + quote(text));
  }
  return value;
}

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

// Sets `endpoint`'s login: --password-file, else the URL's password, else
// $RLOCK_PASSWORD, else $REDISCLI_AUTH. A URL's login of one word
// (redis://word@host) is the password, as redis-cli reads it, unless a
// password comes from one of the others: then it is the user.
void
set_login(const RawOptions& raw,
          const Environment& environment,
          redis::Endpoint& endpoint) {
  std::optional<std::string> given;
  if (raw.password_file) {
    given = read_password_file(*raw.password_file, "--password-file");
  } else if (environment.rlock_password) {
    given = environment.rlock_password;
  } else if (environment.rediscli_auth) {
    given = environment.rediscli_auth;
  }
  if (endpoint.login_one_word && given) {
    endpoint.user = endpoint.password;
    endpoint.password = *given;
  } else if (raw.password_file || endpoint.password.empty()) {
    endpoint.password = given.value_or("");
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

redis::TlsOptions
tls_options_of(const RawOptions& raw,
               const redis::Endpoint& endpoint,
               const std::string& url_source) {
  const std::pair<const char*, bool> given[] = {
      {"--tls-ca", raw.tls_ca.has_value()},
      {"--tls-cert", raw.tls_cert.has_value()},
      {"--tls-key", raw.tls_key.has_value()},
      {"--tls-server-name", raw.tls_server_name.has_value()},
      {"--tls-insecure", raw.tls_insecure}};
  for (const auto& [option, present] : given) {
    if (present && !endpoint.tls) {
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
  int count = -1;
  const auto* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, count);
  if (text->empty() || ec != std::errc() || ptr != end || count < 0
      || count > 1000) {
    throw_usage(option + ": must be a number of replicas (0..1000), all or "
                + "auto, got " + quote(*text));
  }
  policy.mode = Mode::count;
  policy.count = count;
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

} // namespace

namespace {

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

// A member of a quorum: one server or a Sentinel master, with its login.
ServerOptions::QuorumMember
member_of(const redis::DeploymentUrl& url,
          const RawOptions& raw,
          const Environment& environment) {
  ServerOptions::QuorumMember member;
  const bool sentinel = url.kind == redis::TopologyKind::sentinel;
  member.endpoint = sentinel ? url.data_node(redis::HostPort{}) : url.endpoint;
  set_login(raw, environment, member.endpoint);
  if (sentinel) {
    member.sentinel = sentinel_master_of(
        url, sentinel_password_of(raw, environment), member.endpoint);
  }
  member.replicas = replica_policy_of(raw, environment, sentinel);
  return member;
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
  int quorum = 0;
  const auto& text = *raw.quorum;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, quorum);
  if (text.empty() || ec != std::errc() || ptr != end || quorum <= servers / 2
      || quorum > servers) {
    throw_usage("--quorum: must be a majority of the " + std::to_string(servers)
                + " servers (" + std::to_string(servers / 2 + 1) + ".."
                + std::to_string(servers) + "), got " + quote(text));
  }
  return quorum;
}

// Fills the members of a quorum of independent masters (Redlock).
void
add_members(ServerOptions& server,
            const UrlList& list,
            const std::vector<redis::DeploymentUrl>& parsed,
            const RawOptions& raw,
            const Environment& environment) {
  const int count = static_cast<int>(parsed.size());
  if (count < 3) {
    throw_usage(list.option + ": a quorum needs at least 3 servers, got "
                + std::to_string(count));
  }
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
    server.members.push_back(member_of(url, raw, environment));
  }
  if (raw.fair) {
    throw_usage("--fair: not with several --url (each server's queue has "
                "its own order, and no order is common to a quorum)");
  }
  server.quorum = quorum_of(raw, count);
  if (count % 2 == 0) {
    log::warning(std::to_string(count) + " servers: a quorum of "
                 + std::to_string(server.quorum) + " survives no more failed "
                 + "servers than " + std::to_string(count - 1)
                 + " would; an odd number is better");
  }
}

} // namespace

ServerOptions
server_of(const RawOptions& raw, const Environment& environment) {
  ServerOptions server;
  const auto list = urls_of(raw, environment);
  const std::string& option = list.option;
  std::vector<redis::DeploymentUrl> parsed;
  for (const auto& url : list.urls) {
    parsed.push_back(
        value_or_usage_error(redis::parse_deployment_url(url), option));
  }
  const auto& deployment = parsed.front();
  if (parsed.size() > 1) {
    add_members(server, list, parsed, raw, environment);
  } else {
    quorum_of(raw, 1);
  }
  using Kind = redis::TopologyKind;
  const bool sentinel = deployment.kind == Kind::sentinel;
  const bool cluster = deployment.kind == Kind::cluster;
  server.endpoint = sentinel || cluster
                        ? deployment.data_node(redis::HostPort{})
                        : deployment.endpoint;
  set_login(raw, environment, server.endpoint);
  if (sentinel) {
    server.sentinel = sentinel_master_of(
        deployment, sentinel_password_of(raw, environment), server.endpoint);
  } else if (raw.sentinel_password_file) {
    throw_usage("--sentinel-password-file needs a redis+sentinel:// URL ("
                + option + " is not one)");
  }
  if (cluster) {
    server.cluster = redis::ClusterSeeds{deployment.nodes, server.endpoint};
  }
  server.replicas = replica_policy_of(raw, environment, sentinel || cluster);
  auto tls_endpoint = server.endpoint;
  for (const auto& member : server.members) {
    tls_endpoint.tls = tls_endpoint.tls || member.endpoint.tls;
  }
  server.connect.tls = tls_options_of(raw, tls_endpoint, option);
  // An empty --prefix is a prefix like any other.
  server.prefix = raw.prefix                 ? *raw.prefix
                  : environment.rlock_prefix ? *environment.rlock_prefix
                                             : defaults::k_prefix;
  if (cluster && server.prefix.find_first_of("{}") != std::string::npos) {
    throw_usage(std::string(raw.prefix ? "--prefix" : "RLOCK_PREFIX")
                + ": must hold no brace with Redis Cluster (a brace would "
                  "split a lock's keys over slots), got "
                + quote(server.prefix));
  }
  server.connect.connect_timeout = duration_or(raw.connect_timeout,
                                               defaults::k_connect_timeout,
                                               "--connect-timeout",
                                               false);
  server.connect.io_timeout = duration_or(
      raw.io_timeout, defaults::k_io_timeout, "--io-timeout", false);
  return server;
}

lock::LeaseTiming
timing_of(Duration ttl, std::optional<Duration> kill_after) {
  const auto timing =
      lock::make_timing(ttl, kill_after, {"--ttl", "--kill-after"});
  if (!timing) {
    throw_usage(timing.error());
  }
  return timing.value();
}

// Returns --limit's N, 1..k_max_limit; lock::k_shared_limit for --shared;
// 0 for neither. Several --url are refused: a permit granted by a majority
// of servers is not one of N (two majorities of the quorum's servers may
// each count N holders of their own), so N permits over a quorum would
// admit more than N; and a quorum keeps one holder per NAME.
// Returns --limit's N; throws for anything but an integer 1..k_max_limit.
std::int64_t
parse_limit(const std::string& text) {
  std::int64_t limit = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, limit);
  if (text.empty() || ec != std::errc() || ptr != end || limit < 1
      || limit > defaults::k_max_limit) {
    throw_usage("--limit: must be an integer from 1 to "
                + std::to_string(defaults::k_max_limit) + ", got "
                + quote(text));
  }
  return limit;
}

std::int64_t
limit_of(const std::optional<std::string>& text,
         bool shared,
         const ServerOptions& server) {
  // A bad value is named first, whatever it is combined with.
  const std::int64_t limit = text ? parse_limit(*text) : 0;
  if (shared && text) {
    throw_usage("--shared: not with --limit " + quote(*text)
                + ": --shared admits any number of holders, --limit N "
                  "counts them");
  }
  if (shared && !server.members.empty()) {
    throw_usage("--shared: not with several --url: a quorum of servers "
                "keeps one holder per NAME");
  }
  if (shared) {
    return lock::k_shared_limit;
  }
  if (limit > 0 && !server.members.empty()) {
    throw_usage("--limit: not with several --url: N permits over a quorum "
                "of servers is unsound (two majorities may each grant their "
                "own N)");
  }
  return limit;
}

std::string
parent_token_of(std::int64_t limit,
                const std::string& name,
                const Environment& environment) {
  if (limit > 0 || environment.rlock_name != name) {
    return "";
  }
  return environment.rlock_token.value_or("");
}

WaitingOptions
waiting_of(const RawOptions& raw) {
  WaitingOptions waiting;
  waiting.wait = optional_duration_of(raw.wait, "--wait", true);
  waiting.nonblock = raw.nonblock || waiting.wait == Duration::zero();
  if (raw.nonblock) {
    waiting.wait.reset(); // -n wins over -w, as in flock: no wait at all
  }
  waiting.fair = raw.fair;
  if (raw.conflict_exit_code) {
    waiting.conflict_exit_code = exit_code_of(*raw.conflict_exit_code);
  }
  return waiting;
}

// $RLOCK_TOKEN belongs to the lock $RLOCK_NAME: a job that takes a second
// lock inside `rlock NAME COMMAND` must not use the outer lock's token.
std::string
token_of(const std::string& typed,
         const std::string& name,
         const Environment& environment) {
  if (!typed.empty()) {
    return typed;
  }
  if (!environment.rlock_token || environment.rlock_token->empty()) {
    throw_usage("--token: required, or set $RLOCK_TOKEN");
  }
  if (!environment.rlock_name) {
    throw_usage("--token: required; $RLOCK_TOKEN counts only when $RLOCK_NAME"
                " is "
                + quote(name) + ", and $RLOCK_NAME is not set");
  }
  if (*environment.rlock_name != name) {
    throw_usage("--token: required; $RLOCK_TOKEN is the token of "
                + quote(*environment.rlock_name) + " ($RLOCK_NAME), not of "
                + quote(name));
  }
  return *environment.rlock_token;
}

std::string
validated_name(const std::string& name) {
  return value_or_usage_error(lock::validate_name(name), "NAME");
}

log::Level
log_level_of(const RawOptions& raw) {
  if (raw.verbose && raw.quiet) {
    throw_usage("--verbose and --quiet exclude each other");
  }
  return raw.verbose ? log::Level::verbose
         : raw.quiet ? log::Level::quiet
                     : log::Level::normal;
}

} // namespace rlock::cli::detail
