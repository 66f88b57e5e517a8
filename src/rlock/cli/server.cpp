#include <rlock/cli/server.hpp>

namespace rlock::cli {

lock::Deployment
deployment_of(const ServerOptions& server) {
  return lock::Deployment{
      server.endpoint, server.connect, server.prefix, server.restart_grace};
}

std::unique_ptr<lock::LockStore>
open_store(const ServerOptions& server) {
  return lock::open_store(deployment_of(server));
}

} // namespace rlock::cli
