#include <rlock/cli/doctor.hpp>
#include <rlock/cli/doctor_checks.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/server.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/util/error.hpp>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

namespace rlock::cli {

namespace {

void
add_options(CLI::App& app, detail::RawOptions& raw) {
  detail::add_optional(
      app, "NAME", raw.doctor.name, "also say where this lock lives")
      ->type_name("");
  detail::add_optional(app,
                       "-t,--ttl",
                       raw.doctor.ttl,
                       "judge the round trip against a D lease ("
                           + defaults::help_text(defaults::k_doctor_ttl) + ")")
      ->type_name("D")
      ->group("Checks");
  detail::add_optional(app,
                       "--restart-grace",
                       raw.restart_grace,
                       "judge the hold-back after a restart against D, as\n"
                       "the lock commands take it ($RLOCK_RESTART_GRACE, "
                           + defaults::help_text(defaults::k_restart_grace)
                           + ")")
      ->type_name("D")
      ->group("Checks");
  app.add_flag("--json", raw.doctor.json, "print a JSON object")
      ->group("Output");
  detail::add_server_options(app, raw);
  app.set_help_flag("-h,--help", "print this help and exit")->group("Output");
}

ParsedCommand
options_of(const detail::RawOptions& raw, const Environment& environment) {
  DoctorOptions options;
  options.server = detail::server_of(raw, environment);
  // What runs will use (--restart-grace, $RLOCK_RESTART_GRACE or the
  // default), for each server's `holdback` check and a quorum's `restarts`.
  options.server.restart_grace = detail::restart_grace_of(raw, environment);
  options.json = raw.doctor.json;
  if (raw.doctor.name) {
    options.name = detail::validated_name(*raw.doctor.name);
  }
  const auto ttl = detail::duration_or(
      raw.doctor.ttl, defaults::k_doctor_ttl, "--ttl", false);
  options.timing = detail::timing_of(ttl, std::nullopt);
  return options;
}

void
write_out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0) {
    throw Error(ErrorKind::output, "cannot write output");
  }
}

} // namespace

CommandEntry
doctor_command() {
  return {"doctor",
          "check that Redis keeps locks safe",
          "rlock doctor [-t D] [--restart-grace D] [--json] [NAME]",
          "Checks eviction, persistence, replication, round trip, clock,\n"
          "version and the restart hold-back (with Sentinel also the\n"
          "sentinels and the failover time; with Cluster each master,\n"
          "then the cluster state and slots, the replicas and the failover\n"
          "time; with several --url each server, then the quorum, that\n"
          "they are independent masters, restarts against the TTL and\n"
          "--restart-grace, and their clocks), and with NAME where that\n"
          "lock lives (its key; with Cluster its slot and master); one line\n"
          "each: ok, warn, fail or unknown, name, message.\n"
          "Exit: 0 every check ok, 1 any other, 69 Redis unavailable,\n"
          "74 output could not be written.",
          add_options,
          options_of};
}

int
run(const DoctorOptions& options) {
  const auto store = store_for(options.server);
  const auto facts = store->examine();
  const DeploymentFacts deployment{options.server.replicas,
                                   store->deployment_state(),
                                   options.server.restart_grace.length};
  std::optional<NamedLock> name;
  if (options.name) {
    name = NamedLock{*options.name, store->key_of(*options.name)};
  }
  const auto report = diagnose_all(facts, options.timing, deployment, name);
  write_out(options.json ? format_doctor_json(report)
                         : format_doctor_text(report));
  return doctor_exit_code(report);
}

} // namespace rlock::cli
