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

#include <CLI/CLI.hpp>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <ctime>

namespace rlock::cli {

namespace {

constexpr std::size_t k_default_width = 80;

void
add_options(CLI::App& app, detail::RawOptions& raw) {
  auto& status = raw.status;
  app.add_option("NAME", status.names, "locks to show (default: all held)")
      ->type_name("");
  const std::string output = "Output";
  app.add_flag("--json", status.json, "print a JSON array")->group(output);
  app.add_flag("--wide", status.wide, "never cut the COMMAND column")
      ->group(output);
  app.add_option("--match", status.match, "only NAMEs matching a glob")
      ->type_name("GLOB")
      ->group(output);
  app.add_flag("--watch", status.watch, "redraw until interrupted")
      ->group(output);
  detail::add_optional(app,
                       "-i,--interval",
                       status.interval,
                       "redraw every D ("
                           + defaults::help_text(defaults::k_status_interval)
                           + ")")
      ->type_name("D")
      ->group(output);
  detail::add_optional(app,
                       "--restart-grace",
                       raw.restart_grace,
                       "say whether a server up less than D holds locks\n"
                       "back, as the lock commands take it "
                       "($RLOCK_RESTART_GRACE, "
                           + defaults::help_text(defaults::k_restart_grace)
                           + ")")
      ->type_name("D")
      ->group(output);
  detail::add_server_options(app, raw);
  app.set_help_flag("-h,--help", "print this help and exit")->group(output);
}

ParsedCommand
options_of(const detail::RawOptions& raw, const Environment& environment) {
  const auto& status = raw.status;
  if (status.json && (status.wide || status.watch)) {
    throw_usage(std::string("--json and ")
                + (status.wide ? "--wide" : "--watch") + " exclude each other");
  }
  StatusOptions options;
  options.server = detail::server_of(raw, environment);
  options.server.restart_grace = detail::restart_grace_of(raw, environment);
  options.json = status.json;
  options.wide = status.wide;
  options.match = status.match;
  if (!status.match.empty() && !status.names.empty()) {
    throw_usage("--match: filters a listing; give it no NAME, got "
                + quote(status.names.front()));
  }
  const auto interval = detail::duration_or(
      status.interval, defaults::k_status_interval, "--interval", false);
  if (status.watch) {
    options.watch = interval;
  }
  if (raw.compat && status.names.empty()) {
    throw_usage("--compat " + *raw.compat
                + ": status needs the lock's NAME: the application's keys "
                  "cannot be told from other keys");
  }
  for (const auto& name : status.names) {
    options.names.push_back(detail::validated_name(name));
  }
  return options;
}

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
read_snapshot(lock::StoreSurvey& store, const StatusOptions& options) {
  if (!options.names.empty()) {
    return store.read_locks(options.names);
  }
  return store.list_locks(options.match.empty() ? "*" : options.match);
}

std::string
nothing_held(const StatusOptions& options,
             const lock::StatusSnapshot& snapshot) {
  return "no locks held under prefix " + quote(options.server.prefix)
         + (options.match.empty() ? "" : " matching " + quote(options.match))
         + (snapshot.unreachable.empty() ? ""
                                         : " on the masters that answered");
}

// Names on stderr each Cluster master whose locks are missing from
// `snapshot`, or each server of a quorum that did not answer; returns
// whether the listing is incomplete: a master is missing, or fewer than a
// quorum of servers answered.
bool
report_unreachable(const lock::StatusSnapshot& snapshot) {
  if (snapshot.quorum > 0) {
    const auto silent = static_cast<int>(snapshot.unreachable.size());
    const bool too_few = snapshot.servers - silent < snapshot.quorum;
    for (const auto& server : snapshot.unreachable) {
      (too_few ? log::error : log::warning)("server " + server.address
                                            + " did not answer: " + server.why);
    }
    return too_few;
  }
  for (const auto& silent : snapshot.unreachable) {
    log::error("the locks on master " + silent.address
               + " are not listed: " + silent.why);
  }
  return !snapshot.unreachable.empty();
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

// Names on stderr the sentinels, and the Cluster masters not already named
// in `snapshot.unreachable`, that did not answer.
void
report_silent_nodes(const lock::DeploymentState& state,
                    const lock::StatusSnapshot& snapshot) {
  if (const auto* sentinels =
          std::get_if<lock::SentinelDeploymentState>(&state)) {
    for (const auto& sentinel : sentinels->sentinels) {
      if (!sentinel.error.empty()) {
        log::warning("sentinel " + sentinel.address
                     + " did not answer: " + sentinel.error);
      }
    }
  }
  const auto* cluster = std::get_if<lock::ClusterDeploymentState>(&state);
  if (cluster == nullptr) {
    return;
  }
  for (const auto& shard : cluster->shards) {
    const auto named = std::any_of(snapshot.unreachable.begin(),
                                   snapshot.unreachable.end(),
                                   [&](const lock::SilentNode& silent) {
                                     return silent.address == shard.master;
                                   });
    if (!shard.error.empty() && !named) {
      log::warning("master " + shard.master
                   + " did not answer: " + shard.error);
    }
  }
}

// Returns the topology line for a replicated or sharded deployment ("" for
// one server); a node that did not answer is named on stderr.
std::string
topology_line(lock::StoreSurvey& store, const lock::StatusSnapshot& snapshot) {
  const auto state = store.deployment_state();
  if (!state) {
    return {};
  }
  report_silent_nodes(*state, snapshot);
  return format_topology_line(*state);
}

// Redraws the table every interval until SIGINT, SIGTERM or SIGHUP.
int
watch(lock::StoreSurvey& store, const StatusOptions& options) {
  const proc::SignalBlock signals({SIGINT, SIGTERM, SIGHUP}, {SIGPIPE});
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  const auto interval_ms =
      std::chrono::ceil<std::chrono::milliseconds>(*options.watch).count();
  do {
    const auto snapshot = read_snapshot(store, options);
    std::string text = terminal ? "\033[H\033[2J" : "";
    text += "Every " + format_duration(*options.watch) + ": rlock status"
            + std::string(8, ' ') + local_time_now() + "\n\n"
            + topology_line(store, snapshot);
    text += snapshot.locks.empty()
                ? nothing_held(options, snapshot) + "\n"
                : format_status_table(snapshot, table_width(options));
    write_out(terminal ? text : text + "\n");
    report_unreachable(snapshot);
  } while (
      signals.wait(static_cast<int>(std::min<long long>(interval_ms, INT_MAX)))
      == 0);
  return exit_code::k_success;
}

// The Sentinel master's address, which every lock of `snapshot` is kept on;
// "" when the store said where each lock is (Cluster) or there is none.
std::string
common_node(lock::StoreSurvey& store, const lock::StatusSnapshot& snapshot) {
  const bool located =
      std::all_of(snapshot.locks.begin(),
                  snapshot.locks.end(),
                  [](const auto& state) { return state.cluster.has_value(); });
  if (located) {
    return {};
  }
  const auto state = store.deployment_state();
  const auto* sentinel =
      state ? std::get_if<lock::SentinelDeploymentState>(&*state) : nullptr;
  return sentinel ? sentinel->master : "";
}

// Whether the server holds new locks back (--restart-grace), as a run
// would be told: a look at the first NAME (any name: the grace is the
// server's), which takes nothing. Nothing when it does not, when it cannot
// tell (INFO refused: a run says so), or with a quorum, whose looks do not
// judge the grace.
std::optional<lock::Busy>
held_back(lock::LockStore& store, const StatusOptions& options) {
  if (options.server.restart_grace.length <= Duration::zero()) {
    return std::nullopt;
  }
  try {
    const auto look =
        store.peek(options.names.empty() ? "status" : options.names.front());
    const auto* busy = std::get_if<lock::Busy>(&look);
    if (busy && !busy->held_back.empty()) {
      return *busy;
    }
  } catch (const Error&) {
    // The listing says what is wrong with the server, if anything.
  }
  return std::nullopt;
}

// Prints `snapshot` as a table or JSON, with the hold-back `held` if any.
void
print_snapshot(lock::StoreSurvey& store,
               const StatusOptions& options,
               const lock::StatusSnapshot& snapshot,
               const std::optional<lock::Busy>& held) {
  if (options.json) {
    write_out(format_status_json(
        snapshot,
        common_node(store, snapshot),
        held ? std::optional<std::int64_t>(held->retry_ms) : std::nullopt));
    return;
  }
  const auto topology = topology_line(store, snapshot);
  const std::string held_line =
      held ? "held back: " + held->held_back + "\n" : "";
  if (options.names.empty() && snapshot.locks.empty()) {
    write_out(topology);
    if (held) {
      log::notice("held back: " + held->held_back);
    }
    log::error(nothing_held(options, snapshot));
    return;
  }
  write_out(topology + held_line
            + format_status_table(snapshot, table_width(options)));
}

} // namespace

CommandEntry
status_command() {
  return {"status",
          "show who holds which lock",
          "rlock status [--json|--wide] [--match GLOB] [--watch [-i D]] "
          "[--restart-grace D] "
          "[NAME...]",
          "Exit: 0 all named locks held (or a listing), 1 one is free,\n"
          "69 Redis unavailable (or a Cluster master, or more servers of a\n"
          "quorum than it can spare, did not answer: what the others say\n"
          "is shown), 74 output could not be written.",
          add_options,
          options_of};
}

int
run(const StatusOptions& options) {
  const auto owned_store = store_for(options.server);
  auto& store = *owned_store;
  store.connect();
  if (options.watch) {
    return watch(store, options);
  }
  const auto held = held_back(store, options);
  const auto snapshot = read_snapshot(store, options);
  print_snapshot(store, options, snapshot, held);
  if (report_unreachable(snapshot)) {
    return exit_code::k_unavailable;
  }
  const bool any_free =
      std::any_of(snapshot.locks.begin(),
                  snapshot.locks.end(),
                  [](const auto& state) { return !state.held; });
  return any_free ? exit_code::k_failure : exit_code::k_success;
}

} // namespace rlock::cli
