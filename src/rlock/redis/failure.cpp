#include <rlock/redis/failure.hpp>

namespace rlock::redis {

std::string
server_code_of(std::string_view error) {
  return std::string(error.substr(0, error.find(' ')));
}

bool
may_pass(const Failure& failure) {
  switch (failure.failure_kind()) {
  case FailureKind::refused:
  case FailureKind::timed_out:
  case FailureKind::closed:
  case FailureKind::not_redis:
  case FailureKind::not_master:
  case FailureKind::unconfirmed:
    return true;
  case FailureKind::server_error: {
    const auto& code = failure.server_code();
    return code == "LOADING" || code == "BUSY" || code == "MASTERDOWN"
           || code == "TRYAGAIN" || code == "CLUSTERDOWN" || code == "READONLY"
           || (code == "ERR"
               && std::string_view(failure.what())
                          .find("max number of clients reached")
                      != std::string_view::npos);
  }
  case FailureKind::auth_refused:
  case FailureKind::tls_failed:
  case FailureKind::unexpected_reply:
  case FailureKind::bad_address:
    return false;
  }
  return false;
}

bool
failover_under_way(const Failure& failure) {
  switch (failure.failure_kind()) {
  case FailureKind::not_master:
  case FailureKind::unconfirmed:
    return true;
  case FailureKind::server_error: {
    const auto& code = failure.server_code();
    return code == "TRYAGAIN" || code == "CLUSTERDOWN";
  }
  default:
    return false;
  }
}

bool
is_unknown_command(std::string_view error) {
  return error.starts_with("ERR unknown command");
}

void
throw_server_error(const std::string& what, const std::string& error) {
  throw Failure(FailureKind::server_error,
                what + ": " + error,
                server_code_of(error),
                error);
}

} // namespace rlock::redis
