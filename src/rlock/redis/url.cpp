// Over 600 lines: one parser for every URL form (plain, TLS, Sentinel,
// Cluster, unix socket, IPv6 with zone ids), which share the authority and
// query parsing; kept whole on purpose.

#include <rlock/redis/url.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <array>
#include <cctype>

namespace rlock::redis {

namespace {

using Result = Expected<Endpoint>;

constexpr std::string_view k_tcp_scheme = "redis://";
constexpr std::string_view k_tls_scheme = "rediss://";
constexpr std::string_view k_unix_scheme = "unix://";

int
hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

std::optional<std::string>
percent_decode(std::string_view text) {
  std::string result;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      result += text[i];
      continue;
    }
    if (i + 2 >= text.size()) {
      return std::nullopt;
    }
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    result += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return result;
}

// Parses "user:password@" (without the '@') into the endpoint.
std::optional<std::string>
parse_userinfo(std::string_view userinfo, Endpoint& endpoint) {
  const auto colon = userinfo.find(':');
  const auto user = percent_decode(userinfo.substr(0, colon));
  const auto password = colon == std::string_view::npos
                            ? std::optional<std::string>("")
                            : percent_decode(userinfo.substr(colon + 1));
  if (!user || !password) {
    return "bad percent-encoding in the user or password";
  }
  endpoint.user = *user;
  endpoint.password = *password;
  if (colon == std::string_view::npos) {
    // redis://secret@host is the common way to give only a password.
    endpoint.password = endpoint.user;
    endpoint.user.clear();
    endpoint.login_one_word = true;
  }
  return std::nullopt;
}

bool
is_unreserved(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-'
         || c == '.' || c == '_' || c == '~';
}

// Parses what stands between '[' and ']' into `host`, as getaddrinfo takes
// it: an IPv6 address with its zone id (RFC 6874, "fe80::1%25eth0", or
// "fe80::1%eth0" as curl also reads it) becomes "fe80::1%eth0".
std::optional<std::string>
parse_ipv6_literal(std::string_view text, std::string& host) {
  const auto percent = text.find('%');
  if (percent == std::string_view::npos) {
    host = std::string(text);
    return std::nullopt;
  }
  auto zone_text = text.substr(percent + 1);
  std::optional<std::string> zone = std::string(zone_text);
  if (zone_text.starts_with("25")) {
    zone = percent_decode(zone_text.substr(2));
  }
  if (!zone || zone->empty()
      || !std::all_of(zone->begin(), zone->end(), is_unreserved)) {
    return "bad IPv6 zone id: write it as [ADDRESS%25ZONE], e.g. "
           "[fe80::1%25eth0]";
  }
  host = std::string(text.substr(0, percent)) + "%" + *zone;
  return std::nullopt;
}

// Parses "host[:port]" or "[v6]:port" into the endpoint.
std::optional<std::string>
parse_host_port(std::string_view text, Endpoint& endpoint) {
  std::string_view port_text;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos) {
      return "unclosed '[' in the host";
    }
    if (auto error =
            parse_ipv6_literal(text.substr(1, close - 1), endpoint.host)) {
      return error;
    }
    const auto rest = text.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) {
      return "unexpected text after ']'";
    }
    port_text = rest.empty() ? rest : rest.substr(1);
  } else {
    const auto colon = text.find(':');
    endpoint.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = text.substr(colon + 1);
      if (port_text.empty()) {
        return "empty port";
      }
    }
  }
  if (endpoint.host.empty()) {
    return "missing host";
  }
  if (!port_text.empty()) {
    const auto port = parse_integer(port_text, 1, 65535);
    if (!port) {
      return "port must be a number from 1 to 65535";
    }
    endpoint.port = static_cast<int>(*port);
  }
  return std::nullopt;
}

std::optional<std::string>
parse_db(std::string_view text, int& db) {
  const auto value = parse_integer(text, 0, 1'000'000);
  if (!value) {
    return "database must be a non-negative number";
  }
  db = static_cast<int>(*value);
  return std::nullopt;
}

std::optional<std::string>
parse_tcp(std::string_view rest, Endpoint& endpoint) {
  const auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  const auto at = authority.rfind('@');
  if (at != std::string_view::npos) {
    if (auto error = parse_userinfo(authority.substr(0, at), endpoint)) {
      return error;
    }
    authority = authority.substr(at + 1);
  }
  if (auto error = parse_host_port(authority, endpoint)) {
    return error;
  }
  if (slash != std::string_view::npos && slash + 1 < rest.size()) {
    return parse_db(rest.substr(slash + 1), endpoint.db);
  }
  return std::nullopt;
}

std::optional<std::string>
parse_unix(std::string_view rest, Endpoint& endpoint) {
  const auto question = rest.find('?');
  endpoint.socket_path = std::string(rest.substr(0, question));
  if (!endpoint.socket_path.starts_with('/')) {
    return "the socket path must be absolute (unix:///path/to.sock)";
  }
  if (question == std::string_view::npos) {
    return std::nullopt;
  }
  const auto query = rest.substr(question + 1);
  if (!query.starts_with("db=")) {
    return "the only query parameter is db=N";
  }
  return parse_db(query.substr(3), endpoint.db);
}

struct ListScheme {
  std::string_view prefix;
  TopologyKind kind;
  bool tls;
};

constexpr std::array<ListScheme, 4> k_list_schemes{{
    {"redis+sentinel://", TopologyKind::sentinel, false},
    {"rediss+sentinel://", TopologyKind::sentinel, true},
    {"redis+cluster://", TopologyKind::cluster, false},
    {"rediss+cluster://", TopologyKind::cluster, true},
}};

bool
is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7F;
}

std::string
format_address(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string
lower(std::string_view text) {
  std::string result(text);
  for (auto& c : result) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return result;
}

// Host names are case-insensitive; names that resolve to one address are
// not caught here, a parser does no I/O.
bool
same_node(const HostPort& a, const HostPort& b) {
  return a.port == b.port && lower(a.host) == lower(b.host);
}

// Reasons name a host by its place, never by its text: when a password holds
// a raw '/', its start is what this parser takes for the host list.
std::optional<std::string>
parse_host_entry(std::string_view entry, int default_port, HostPort& node) {
  if (entry.empty()) {
    return "empty host in the list";
  }
  // "a, b" is a likely slip when writing a list by hand.
  if (std::any_of(entry.begin(), entry.end(), [](char c) {
        return c == ' ' || is_control(c);
      })) {
    return "a host must not contain spaces or control characters";
  }
  Endpoint endpoint;
  endpoint.port = default_port;
  if (auto error = parse_host_port(entry, endpoint)) {
    return error;
  }
  node = HostPort{endpoint.host, endpoint.port};
  return std::nullopt;
}

std::optional<std::string>
parse_host_list(std::string_view text,
                int default_port,
                std::string_view what,
                std::vector<HostPort>& nodes) {
  if (text.empty()) {
    return "no " + std::string(what) + " listed";
  }
  std::size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const auto place = std::to_string(nodes.size() + 1);
    HostPort node;
    if (auto error = parse_host_entry(
            text.substr(start, comma - start), default_port, node)) {
      return *error + " (host " + place + ")";
    }
    // A sentinel counted twice would make agreement look wider than it is.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (same_node(nodes[i], node)) {
        return "hosts " + std::to_string(i + 1) + " and " + place
               + " are the same";
      }
    }
    nodes.push_back(std::move(node));
    if (comma == std::string_view::npos) {
      return std::nullopt;
    }
    start = comma + 1;
  }
}

std::optional<std::string>
parse_master_name(std::string_view text, std::string& master_name) {
  const auto name = percent_decode(text);
  if (!name) {
    return "bad percent-encoding in the master name";
  }
  if (name->empty()) {
    return "missing master name (the path is /MASTER or /MASTER/DB)";
  }
  if (std::any_of(name->begin(), name->end(), [](char c) {
        return c == '/' || is_control(c);
      })) {
    return "the master name must not contain '/' or control characters";
  }
  master_name = *name;
  return std::nullopt;
}

std::optional<std::string>
parse_sentinel_path(std::string_view path, DeploymentUrl& deployment) {
  const auto slash = path.find('/');
  if (auto error =
          parse_master_name(path.substr(0, slash), deployment.master_name)) {
    return error;
  }
  if (slash == std::string_view::npos || slash + 1 == path.size()) {
    return std::nullopt;
  }
  const auto db_text = path.substr(slash + 1);
  if (db_text.find('/') != std::string_view::npos) {
    return "the path must be /MASTER or /MASTER/DB (a master name cannot "
           "contain '/')";
  }
  return parse_db(db_text, deployment.db);
}

std::optional<std::string>
parse_cluster_path(std::string_view path) {
  if (path.empty()) {
    return std::nullopt;
  }
  int db = 0;
  if (auto error = parse_db(path, db)) {
    return error;
  }
  if (db != 0) {
    return "Redis Cluster has only database 0";
  }
  return std::nullopt;
}

// Parses what follows a redis[s]+sentinel:// or redis[s]+cluster:// scheme.
std::optional<std::string>
parse_list_url(std::string_view rest, DeploymentUrl& deployment) {
  const auto slash = rest.find('/');
  auto hosts = rest.substr(0, slash);
  const auto path = slash == std::string_view::npos ? std::string_view()
                                                    : rest.substr(slash + 1);
  const auto at = hosts.rfind('@');
  if (at != std::string_view::npos) {
    Endpoint login;
    if (auto error = parse_userinfo(hosts.substr(0, at), login)) {
      return error;
    }
    deployment.user = login.user;
    deployment.password = login.password;
    deployment.login_one_word = login.login_one_word;
    hosts = hosts.substr(at + 1);
  }
  if (hosts.find_first_of("?#") != std::string_view::npos
      || path.find_first_of("?#") != std::string_view::npos) {
    return "the URL takes no query (?...) or fragment (#...)";
  }
  // Then the last '@' always ends the userinfo, as redact_url assumes.
  if (path.find('@') != std::string_view::npos) {
    return "an '@' after the hosts: write a '/' in the password as %2F and "
           "an '@' in the master name as %40";
  }
  const bool sentinel = deployment.kind == TopologyKind::sentinel;
  if (auto error = parse_host_list(hosts,
                                   sentinel ? k_sentinel_port : 6379,
                                   sentinel ? "sentinel" : "seed node",
                                   deployment.nodes)) {
    return error;
  }
  return sentinel ? parse_sentinel_path(path, deployment)
                  : parse_cluster_path(path);
}

const ListScheme*
find_list_scheme(std::string_view url) {
  for (const auto& scheme : k_list_schemes) {
    if (url.starts_with(scheme.prefix)) {
      return &scheme;
    }
  }
  return nullptr;
}

// Refuses what parse_url refuses or accepts only by accident, with a reason
// that knows of the list forms.
std::optional<std::string>
check_single_url(std::string_view url) {
  if (url.starts_with("redis-sentinel://")
      || url.starts_with("rediss-sentinel://")) {
    return "the scheme is redis+sentinel:// or rediss+sentinel://, with the "
           "master in the path: redis+sentinel://HOST[,HOST...]/MASTER[/DB]";
  }
  std::string_view rest;
  if (url.starts_with(k_tcp_scheme)) {
    rest = url.substr(k_tcp_scheme.size());
  } else if (url.starts_with(k_tls_scheme)) {
    rest = url.substr(k_tls_scheme.size());
  } else if (url.starts_with(k_unix_scheme)) {
    return std::nullopt;
  } else {
    return "scheme must be redis://, rediss://, unix://, redis+sentinel://, "
           "rediss+sentinel://, redis+cluster:// or rediss+cluster://";
  }
  // A host name never holds a comma: "redis://a,b" is a list.
  auto hosts = rest.substr(0, rest.find('/'));
  if (const auto at = hosts.rfind('@'); at != std::string_view::npos) {
    hosts = hosts.substr(at + 1);
  }
  if (hosts.find(',') != std::string_view::npos) {
    return "a list of hosts needs redis+sentinel:// or redis+cluster://";
  }
  // parse_url would take them for part of the host name.
  if (hosts.find_first_of("?#") != std::string_view::npos) {
    return "the URL takes no query (?...) or fragment (#...)";
  }
  return std::nullopt;
}

Expected<DeploymentUrl>
single_deployment(std::string_view url) {
  const auto endpoint = parse_url(url);
  if (!endpoint) {
    return Expected<DeploymentUrl>::failure(endpoint.error());
  }
  DeploymentUrl deployment;
  deployment.endpoint = endpoint.value();
  deployment.db = deployment.endpoint.db;
  deployment.user = deployment.endpoint.user;
  deployment.password = deployment.endpoint.password;
  deployment.tls = deployment.endpoint.tls;
  return deployment;
}

// The value of every query parameter but db= is hidden.
std::string
redact_query(std::string_view text) {
  const auto question = text.find('?');
  if (question == std::string_view::npos) {
    return std::string(text);
  }
  std::string result(text.substr(0, question + 1));
  auto query = text.substr(question + 1);
  while (true) {
    const auto amp = query.find('&');
    const auto param = query.substr(0, amp);
    const auto equals = param.find('=');
    if (param.starts_with("db=") || param.empty()) {
      result += param;
    } else if (equals == std::string_view::npos) {
      result += "***";
    } else {
      result += std::string(param.substr(0, equals + 1)) + "***";
    }
    if (amp == std::string_view::npos) {
      return result;
    }
    result += '&';
    query = query.substr(amp + 1);
  }
}

// Returns `text` with its scheme in lower case: schemes are case-insensitive
// (RFC 3986), "REDIS://host" is "redis://host".
std::string
with_lowercase_scheme(std::string_view text) {
  std::string url(text);
  const auto end = url.find("://");
  for (std::size_t i = 0; end != std::string::npos && i < end; ++i) {
    url[i] =
        static_cast<char>(std::tolower(static_cast<unsigned char>(url[i])));
  }
  return url;
}

// With `whole`, hides a query wherever it starts; without, leaves a '?' in
// the host of a redis:// or rediss:// URL, which parse_url reads as part of
// the host, so that a redacted URL still parses the same.
std::string
redact(std::string_view text, bool whole) {
  const std::string lowered = with_lowercase_scheme(text);
  const std::string_view url = lowered;
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return redact_query(url);
  }
  const auto authority_start = scheme_end + 3;
  // A password may hold a raw '/' or '?' (base64 ones do), so outside unix://
  // the userinfo ends at the last '@': redacting too much beats a leak.
  auto at = url.rfind('@');
  if (url.starts_with(k_unix_scheme)) {
    at = url.substr(0, url.find('/', authority_start)).rfind('@');
  }
  std::string result(url.substr(0, authority_start));
  auto rest = url.substr(authority_start);
  if (at != std::string_view::npos && at >= authority_start) {
    const auto colon = url.substr(0, at).find(':', authority_start);
    const auto secret_start =
        colon == std::string_view::npos ? authority_start : colon + 1;
    result = std::string(url.substr(0, secret_start)) + "***@";
    rest = url.substr(at + 1);
  }
  if (!whole
      && (url.starts_with(k_tcp_scheme) || url.starts_with(k_tls_scheme))) {
    const auto slash = std::min(rest.find('/'), rest.size());
    result += rest.substr(0, slash);
    rest = rest.substr(slash);
  }
  return result + redact_query(rest);
}

} // namespace

std::string
HostPort::address() const {
  return format_address(host, port);
}

std::string
join_addresses(const std::vector<HostPort>& nodes) {
  std::string result;
  for (const auto& node : nodes) {
    result += (result.empty() ? "" : ",") + node.address();
  }
  return result;
}

Endpoint
DeploymentUrl::data_node(const HostPort& node) const {
  Endpoint result;
  result.host = node.host;
  result.port = node.port;
  result.db = db;
  result.user = user;
  result.password = password;
  result.login_one_word = login_one_word;
  result.tls = tls;
  return result;
}

Endpoint
DeploymentUrl::sentinel(const HostPort& node) const {
  Endpoint result;
  result.host = node.host;
  result.port = node.port;
  result.tls = tls;
  return result;
}

std::string
DeploymentUrl::address() const {
  switch (kind) {
  case TopologyKind::single:
    return endpoint.address();
  case TopologyKind::sentinel:
    return "master " + quote(master_name) + " via sentinels "
           + join_addresses(nodes);
  case TopologyKind::cluster:
    return "Redis Cluster via " + join_addresses(nodes);
  }
  return endpoint.address();
}

std::string
Endpoint::address() const {
  if (is_unix()) {
    return socket_path;
  }
  return format_address(host, port);
}

std::string
redact_url(std::string_view url) {
  return redact(url, false);
}

Expected<Endpoint>
parse_url(std::string_view text) {
  const std::string url = with_lowercase_scheme(text);
  Endpoint endpoint;
  std::optional<std::string> error;
  if (url.starts_with(k_tcp_scheme)) {
    error = parse_tcp(url.substr(k_tcp_scheme.size()), endpoint);
  } else if (url.starts_with(k_unix_scheme)) {
    error = parse_unix(url.substr(k_unix_scheme.size()), endpoint);
  } else if (url.starts_with(k_tls_scheme)) {
    endpoint.tls = true;
    error = parse_tcp(url.substr(k_tls_scheme.size()), endpoint);
  } else {
    error = "scheme must be redis://, rediss:// or unix://";
  }
  if (error) {
    return Result::failure("invalid URL " + quote(redact_url(url)) + ": "
                           + *error);
  }
  return endpoint;
}

Expected<DeploymentUrl>
parse_deployment_url(std::string_view text) {
  const std::string url = with_lowercase_scheme(text);
  const auto* scheme = find_list_scheme(url);
  if (!scheme) {
    if (auto error = check_single_url(url)) {
      return Expected<DeploymentUrl>::failure(
          "invalid URL " + quote(redact(url, true)) + ": " + *error);
    }
    return single_deployment(url);
  }
  DeploymentUrl deployment;
  deployment.kind = scheme->kind;
  deployment.tls = scheme->tls;
  if (auto error =
          parse_list_url(url.substr(scheme->prefix.size()), deployment)) {
    return Expected<DeploymentUrl>::failure(
        "invalid URL " + quote(redact(url, true)) + ": " + *error);
  }
  return deployment;
}

} // namespace rlock::redis
