// parse_url, parse_deployment_url and redact_url on arbitrary text. Beyond not
// crashing: a reason is one line, an accepted endpoint is in range, and
// redacting a URL with a password yields the same endpoint with the password
// "***", so no password survives redaction.
#include <rlock/redis/url.hpp>

#include "fuzz.hpp"
#include <cstdint>

using namespace rlock;
using redis::Endpoint;

namespace {

void
check_in_range(std::string_view url, const Endpoint& endpoint) {
  if (endpoint.port < 1 || endpoint.port > 65535 || endpoint.db < 0) {
    fuzz::finding("parse_url accepted a port or database out of range", url);
  }
  if (endpoint.is_unix() != endpoint.host.empty()
      || endpoint.address().empty()) {
    fuzz::finding("parse_url gave neither a host nor a socket", url);
  }
}

void
check_redacted(std::string_view url, const Endpoint& endpoint) {
  const auto redacted = redis::redact_url(url);
  const auto again = redis::parse_url(redacted);
  if (!again) {
    fuzz::finding("the redacted URL no longer parses", redacted);
  }
  const auto& other = again.value();
  if (other.host != endpoint.host || other.port != endpoint.port
      || other.socket_path != endpoint.socket_path || other.db != endpoint.db
      || other.user != endpoint.user) {
    fuzz::finding("redact_url changed more than the password", redacted);
  }
  if (!endpoint.password.empty() && other.password != "***") {
    fuzz::finding("redact_url left the password", redacted);
  }
}

// parse_deployment_url: a reason is one line and never holds the password;
// an accepted deployment has nodes in range, and its redacted URL parses to
// the same nodes.
void
check_deployment(std::string_view url) {
  const auto parsed = redis::parse_deployment_url(url);
  if (!parsed) {
    if (parsed.error().empty() || !fuzz::is_one_line(parsed.error())) {
      fuzz::finding("parse_deployment_url's reason is not one line",
                    parsed.error());
    }
    return;
  }
  const auto& deployment = parsed.value();
  for (const auto& node : deployment.nodes) {
    if (node.port < 1 || node.port > 65535 || node.host.empty()) {
      fuzz::finding("parse_deployment_url accepted a node out of range", url);
    }
  }
  if (deployment.kind != redis::TopologyKind::single
      && deployment.nodes.empty()) {
    fuzz::finding("a Sentinel or Cluster URL without nodes", url);
  }
  const auto again = redis::parse_deployment_url(redis::redact_url(url));
  if (!again || again.value().nodes != deployment.nodes
      || again.value().master_name != deployment.master_name) {
    fuzz::finding("redact_url changed a deployment", url);
  }
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view url(reinterpret_cast<const char*>(data), size);
  const auto parsed = redis::parse_url(url);
  if (parsed) {
    check_in_range(url, parsed.value());
    check_redacted(url, parsed.value());
  } else if (parsed.error().empty() || !fuzz::is_one_line(parsed.error())) {
    fuzz::finding("parse_url's reason is not one line", parsed.error());
  }
  check_deployment(url);
  // redact_url takes anything, URLs parse_url refuses included.
  (void)redis::redact_url(url);
  return 0;
}
