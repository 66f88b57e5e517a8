#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/server.hpp>
#include <rlock/cli/status.hpp>
#include <rlock/cli/status_view.hpp>
#include <rlock/cli/wait_hooks.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/util/clock.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <ctime>

namespace rlock::cli {

namespace {

constexpr std::size_t k_default_width = 80;

// The table's width: the terminal's when stdout is one, else 80 columns.
std::size_t
table_width(const StatusOptions& options) {
  if (options.wide) {
    return std::numeric_limits<std::size_t>::max() / 2;
  }
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0
      && size.ws_col > 0) {
    return size.ws_col;
  }
  return k_default_width;
}

lock::StatusSnapshot
read_snapshot(lock::LockStore& store, const StatusOptions& options) {
  if (!options.names.empty()) {
    return store.read_locks(options.names);
  }
  return store.list_locks(options.match.empty() ? "*" : options.match);
}

std::string
nothing_held(const StatusOptions& options) {
  return "no locks held under prefix " + quote(options.server.prefix)
         + (options.match.empty() ? "" : " matching " + quote(options.match));
}

void
write_out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0) {
    throw Error(ErrorKind::output, "cannot write output");
  }
}

std::string
local_time_now() {
  const time_t now = std::time(nullptr);
  tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

// Redraws the table every interval until SIGINT, SIGTERM or SIGHUP.
int
watch(lock::LockStore& store, const StatusOptions& options) {
  const proc::SignalBlock signals({SIGINT, SIGTERM, SIGHUP}, {SIGPIPE});
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  const auto interval_ms =
      std::chrono::ceil<std::chrono::milliseconds>(*options.watch).count();
  do {
    const auto snapshot = read_snapshot(store, options);
    std::string text = terminal ? "\033[H\033[2J" : "";
    text += "Every " + format_duration(*options.watch) + ": rlock status"
            + std::string(8, ' ') + local_time_now() + "\n\n";
    text += snapshot.locks.empty()
                ? nothing_held(options) + "\n"
                : format_status_table(snapshot, table_width(options));
    write_out(terminal ? text : text + "\n");
  } while (
      signals.wait(static_cast<int>(std::min<long long>(interval_ms, INT_MAX)))
      == 0);
  return exit_code::k_success;
}

} // namespace

int
run_status(const StatusOptions& options) {
  const auto owned_store = open_store(options.server);
  auto& store = *owned_store;
  store.connect();
  if (options.watch) {
    return watch(store, options);
  }
  const auto snapshot = read_snapshot(store, options);
  if (options.names.empty() && snapshot.locks.empty() && !options.json) {
    log::error(nothing_held(options));
    return exit_code::k_success;
  }
  write_out(options.json ? format_status_json(snapshot)
                         : format_status_table(snapshot, table_width(options)));
  const bool any_free =
      std::any_of(snapshot.locks.begin(),
                  snapshot.locks.end(),
                  [](const auto& state) { return !state.held; });
  return any_free ? exit_code::k_failure : exit_code::k_success;
}

} // namespace rlock::cli
