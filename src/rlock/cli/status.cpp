#include <rlock/cli/status.hpp>
#include <rlock/cli/status_view.hpp>
#include <rlock/lock/status.hpp>
#include <rlock/util/exit_codes.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>
#include <cstdio>

namespace rlock::cli {

int
run_status(const StatusOptions& options) {
  auto connection =
      redis::Connection::open(options.server.endpoint, options.server.connect);
  const auto snapshot =
      options.names.empty()
          ? lock::list_locks(connection, options.server.prefix)
          : lock::read_locks(connection, options.server.prefix, options.names);
  if (options.names.empty() && snapshot.locks.empty() && !options.json) {
    log::error("no locks held under prefix " + quote(options.server.prefix));
    return exit_code::k_success;
  }
  const std::string text = options.json ? format_status_json(snapshot)
                                        : format_status_table(snapshot);
  std::fwrite(text.data(), 1, text.size(), stdout);
  const bool any_free =
      std::any_of(snapshot.locks.begin(),
                  snapshot.locks.end(),
                  [](const auto& state) { return !state.held; });
  return any_free ? exit_code::k_failure : exit_code::k_success;
}

} // namespace rlock::cli
