#include <rlock/redis/url.hpp>
#include <rlock/util/text.hpp>

#include <charconv>

namespace rlock::redis {

namespace {

using Result = Expected<Endpoint>;

constexpr std::string_view k_tcp_scheme = "redis://";
constexpr std::string_view k_tls_scheme = "rediss://";
constexpr std::string_view k_unix_scheme = "unix://";

std::optional<int>
parse_int(std::string_view text, int min, int max) {
  int value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min
      || value > max) {
    return std::nullopt;
  }
  return value;
}

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
  }
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
    endpoint.host = std::string(text.substr(1, close - 1));
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
    const auto port = parse_int(port_text, 1, 65535);
    if (!port) {
      return "port must be a number from 1 to 65535";
    }
    endpoint.port = *port;
  }
  return std::nullopt;
}

std::optional<std::string>
parse_db(std::string_view text, Endpoint& endpoint) {
  const auto db = parse_int(text, 0, 1'000'000);
  if (!db) {
    return "database must be a non-negative number";
  }
  endpoint.db = *db;
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
    return parse_db(rest.substr(slash + 1), endpoint);
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
  return parse_db(query.substr(3), endpoint);
}

} // namespace

std::string
Endpoint::address() const {
  if (is_unix()) {
    return socket_path;
  }
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string
redact_url(std::string_view url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return std::string(url);
  }
  const auto authority_start = scheme_end + 3;
  const auto authority_end = url.find('/', authority_start);
  const auto authority =
      url.substr(authority_start, authority_end - authority_start);
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) {
    return std::string(url);
  }
  const auto colon = authority.find(':');
  const auto secret_start = colon < at ? colon + 1 : 0;
  return std::string(url.substr(0, authority_start + secret_start)) + "***"
         + std::string(url.substr(authority_start + at));
}

Expected<Endpoint>
parse_url(std::string_view url) {
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

} // namespace rlock::redis
