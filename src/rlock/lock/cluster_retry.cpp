#include <rlock/lock/cluster_retry.hpp>
#include <rlock/redis/cluster.hpp>

namespace rlock::lock::cluster {

bool
connection_failed(const redis::Failure& failure) {
  using Kind = redis::FailureKind;
  const auto kind = failure.failure_kind();
  return kind == Kind::refused || kind == Kind::timed_out
         || kind == Kind::closed;
}

Retry
retry_after(const redis::Failure& failure, const StepTry& sent) {
  using Action = Retry::Action;
  Retry retry;
  if (connection_failed(failure) && !sent.redirected) {
    retry.action = Action::master_down;
    return retry;
  }
  retry.check_coverage = failure.server_code() == "CLUSTERDOWN";
  const auto redirect = redis::parse_redirect(failure.server_error());
  // An ASK followed with ASKING that did not take (the target lacked the
  // script and EVAL went without ASKING): wait for the migration to end.
  if (failure.server_code() == "TRYAGAIN" || (redirect && sent.asked)) {
    retry.action = Action::pause;
  } else if (!redirect) {
    return retry;
  } else {
    retry.action = Action::follow;
    retry.target = redirect->target(sent.node);
    retry.asking = redirect->kind == redis::Redirect::Kind::ask;
    retry.moved = !retry.asking;
  }
  // Still sent elsewhere or told to wait: the slot is being moved, which
  // passes (a raw ASK or MOVED would end a waiter), but not for ever.
  if (sent.tries >= k_max_tries
      || (retry.action == Action::pause && sent.pause_passes_deadline)) {
    retry.action = Action::still_moving;
  }
  return retry;
}

} // namespace rlock::lock::cluster
