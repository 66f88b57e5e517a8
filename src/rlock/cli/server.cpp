#include <rlock/cli/server.hpp>
#include <rlock/util/log.hpp>

namespace rlock::cli {

lock::Deployment
deployment_of(const ServerOptions& server) {
  return lock::Deployment{server.endpoint,
                          server.sentinel,
                          server.connect,
                          server.prefix,
                          server.cluster,
                          {server.restart_grace, "--restart-grace"},
                          server.replicas};
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
