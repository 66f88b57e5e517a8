#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/server.hpp>
#include <rlock/cli/steps.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/lock/describe.hpp>
#include <rlock/lock/lease.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

namespace rlock::cli {

std::unique_ptr<lock::LockStore>
connected_store(const lock::Deployment& server, log::Level log_level) {
  log::set_level(log_level);
  auto store = store_for(server);
  store->connect();
  return store;
}

std::unique_ptr<lock::LockStore>
waiting_store(const lock::Deployment& server,
              const WaitingOptions& waiting,
              log::Level log_level) {
  log::set_level(log_level);
  auto store = store_for(server);
  connect_for_waiting(*store, waiting);
  return store;
}

int
not_held(lock::LockSteps& store, const std::string& name) {
  std::string whose;
  try {
    const auto now = store.peek(name);
    const auto* held = std::get_if<lock::Busy>(&now);
    whose = !held ? "it is free (the lease ran out, or it was "
                    "released or broken)"
                  : "it is " + lock::held_by_text(*held, true);
  } catch (const Error&) {
    // Who holds it is extra; the answer stands without it.
  }
  log::warning("lock " + quote(name) + " is not held by this token"
               + (whose.empty() ? "" : ": " + whose));
  return exit_code::k_failure;
}

void
refuse_if_impossible(const std::string& name,
                     const lock::AcquireAttempt& attempt,
                     std::int64_t asked,
                     const std::string& who) {
  const auto* busy = std::get_if<lock::Busy>(&attempt);
  if (!busy || !busy->limit_conflict) {
    return;
  }
  const std::int64_t held = *busy->limit_conflict;
  const auto limit_text = [](std::int64_t limit) {
    return limit == 0 ? std::string("no --limit (a plain lock)")
           : limit == lock::k_shared_limit ? std::string("--shared")
                                           : "--limit " + std::to_string(limit);
  };
  const bool shared =
      held == lock::k_shared_limit || asked == lock::k_shared_limit;
  throw_usage("lock " + quote(name) + " is held with " + limit_text(held) + "; "
              + who + " asks for " + limit_text(asked) + ": "
              + (shared ? "--limit and --shared cannot share a NAME"
                        : "every holder must ask for the same limit"));
}

} // namespace rlock::cli
