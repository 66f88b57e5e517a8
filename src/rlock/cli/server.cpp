#include <rlock/cli/server.hpp>
#include <rlock/store/open_store.hpp>
#include <rlock/util/log.hpp>

namespace rlock::cli {

lock::Deployment
deployment_of(const ServerOptions& server) {
  lock::Deployment deployment{server.endpoint,
                              server.sentinel,
                              server.connect,
                              server.prefix,
                              server.cluster,
                              {server.restart_grace, "--restart-grace"},
                              server.replicas,
                              {},
                              server.quorum};
  for (const auto& member : server.members) {
    auto one = deployment;
    one.endpoint = member.endpoint;
    one.sentinel = member.sentinel;
    one.replicas = member.replicas;
    one.quorum = 0;
    deployment.members.push_back(std::move(one));
  }
  return deployment;
}

std::unique_ptr<lock::LockStore>
open_store(const ServerOptions& server) {
  if (server.endpoint.tls && server.connect.tls.insecure) {
    log::warning("--tls-insecure: the server's certificate is not "
                 "verified; anyone on the path can pose as it");
  }
  redis::set_password_sources("--password-file, $RLOCK_PASSWORD or the URL");
  return lock::open_store(deployment_of(server));
}

} // namespace rlock::cli
