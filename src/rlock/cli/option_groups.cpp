#include <rlock/cli/raw_options.hpp>

#include <CLI/CLI.hpp>

#include <string>

// Registers the option groups several commands share with CLI11; the values
// are checked later (cli/raw_options.cpp, cli/server.cpp).

namespace rlock::cli::detail {

namespace {

// Returns the help text's "(DEFAULT)" for a duration.
std::string
shown(Duration duration) {
  return "(" + defaults::help_text(duration) + ")";
}

} // namespace

CLI::Option*
add_optional(CLI::App& app,
             const std::string& names,
             std::optional<std::string>& target,
             const std::string& help) {
  return app.add_option_function<std::string>(
      names, [&target](const std::string& value) { target = value; }, help);
}

void
add_server_options(CLI::App& app, RawOptions& raw) {
  const std::string group = "Connection";
  app.add_option_function<std::string>(
         "--url",
         [&raw](const std::string& value) { raw.urls.push_back(value); },
         "redis[s]://[user[:pass]@]host[:port][/db]\n"
         "or unix:///path.sock[?db=N]\n"
         "or redis[s]+sentinel://host[:port],.../MASTER[/db]\n"
         "or redis[s]+cluster://host[:port],...\n"
         "($RLOCK_URL, $REDIS_URL, "
             + std::string(defaults::k_url)
             + ");\ngiven 3 or more times: a quorum (Redlock)")
      ->type_name("URL")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse()
      ->group(group);
  add_optional(app,
               "--quorum",
               raw.quorum,
               "with several --url: how many must agree\n(a majority)")
      ->type_name("Q")
      ->group(group);
  add_optional(app,
               "--prefix",
               raw.prefix,
               "key prefix ($RLOCK_PREFIX, " + std::string(defaults::k_prefix)
                   + ")")
      ->type_name("P")
      ->group(group);
  add_optional(app,
               "--connect-timeout",
               raw.connect_timeout,
               "per connection attempt " + shown(defaults::k_connect_timeout))
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--io-timeout",
               raw.io_timeout,
               "per reply " + shown(defaults::k_io_timeout))
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--password-file",
               raw.password_file,
               "password: the file's first line\n"
               "(else the URL's, $RLOCK_PASSWORD, $REDISCLI_AUTH)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--password-command",
               raw.password_command,
               "password: the first line a shell command prints,\n"
               "run again for new connections and every\n"
               "--password-refresh while a lock is held\n"
               "($RLOCK_PASSWORD_COMMAND)")
      ->type_name("CMD")
      ->group(group);
  add_optional(app,
               "--password-refresh",
               raw.password_refresh,
               "run the password command this often "
                   + shown(defaults::k_password_refresh))
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--sentinel-password-file",
               raw.sentinel_password_file,
               "the sentinels' password: the file's first line\n"
               "($RLOCK_SENTINEL_PASSWORD)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--replicas",
               raw.replicas,
               "N, all or auto: replicas that must confirm each\n"
               "acquire and renewal ($RLOCK_REPLICAS; "
                   + std::to_string(defaults::k_replicated_replicas)
                   + " with\nSentinel and Cluster, else 0)")
      ->type_name("N")
      ->group(group);
  add_optional(app,
               "--replicas-timeout",
               raw.replicas_timeout,
               "wait at most D for them " + shown(defaults::k_replicas_timeout))
      ->type_name("D")
      ->group(group);
  add_optional(app,
               "--tls-ca",
               raw.tls_ca,
               "rediss://: CA certificates (PEM) to verify\n"
               "the server with (the system's)")
      ->type_name("FILE")
      ->group(group);
  add_optional(
      app, "--tls-cert", raw.tls_cert, "rediss://: client certificate (PEM)")
      ->type_name("FILE")
      ->group(group);
  add_optional(app, "--tls-key", raw.tls_key, "rediss://: its private key")
      ->type_name("FILE")
      ->group(group);
  add_optional(app,
               "--tls-server-name",
               raw.tls_server_name,
               "rediss://: name to verify (the URL's host)")
      ->type_name("NAME")
      ->group(group);
  app.add_flag("--tls-insecure",
               raw.tls_insecure,
               "rediss://: do not verify the server (unsafe)")
      ->group(group);
  add_optional(app,
               "--compat",
               raw.compat,
               "keep the lock as an application's library does:\n"
               "string (key NAME: redis-py, redsync, redlock),\n"
               "shedlock[:ENV] or redisson (docs/sharing.md)")
      ->type_name("STYLE")
      ->group(group);
}

void
add_output_options(CLI::App& app, RawOptions& raw) {
  const std::string output = "Output";
  app.add_flag("-v,--verbose", raw.verbose, "lifecycle lines on stderr")
      ->group(output);
  app.add_flag("-q,--quiet", raw.quiet, "nothing but errors on stderr")
      ->group(output);
  app.set_help_flag("-h,--help", "print this help and exit")->group(output);
}

void
add_wait_options(CLI::App& app, RawOptions& raw, bool with_nonblock) {
  const std::string waiting = "Waiting";
  if (with_nonblock) {
    app.add_flag(
           "-n,--nonblock", raw.nonblock, "fail at once if the lock is held")
        ->group(waiting);
    app.add_flag("--fair", raw.fair, "wait in line: first come, first served")
        ->group(waiting);
  }
  add_optional(app,
               "-w,--wait,--timeout",
               raw.wait,
               "give up after D; -w 0 is -n (forever)")
      ->type_name("D")
      ->group(waiting);
  add_optional(app,
               "--restart-grace",
               raw.restart_grace,
               "take no lock from a server up less than D;\n"
               "0 turns it off ($RLOCK_RESTART_GRACE, "
                   + defaults::help_text(defaults::k_restart_grace) + ")")
      ->type_name("D")
      ->group(waiting);
  add_optional(app,
               "-E,--conflict-exit-code",
               raw.conflict_exit_code,
               "exit code when not acquired, 0..255 ("
                   + std::to_string(defaults::k_conflict_exit_code) + ")")
      ->type_name("N")
      ->group(waiting);
}

void
add_version_flag(CLI::App& app, RawOptions& raw) {
  app.add_flag("-V,--version", raw.version, "print the version and exit")
      ->group("Output");
}

void
add_step_name(CLI::App& app, std::string& name) {
  // One value, so that a second word is an unexpected argument, not a new
  // NAME (valued options take their last value).
  app.add_option_function<std::string>(
         "NAME",
         [&name](const std::string& value) { name = value; },
         "the lock")
      ->type_name("")
      ->required();
}

void
add_token_option(CLI::App& app, std::string& token) {
  app.add_option("--token", token, "the holder's token ($RLOCK_TOKEN)")
      ->type_name("T")
      ->group("Locking");
}

} // namespace rlock::cli::detail
