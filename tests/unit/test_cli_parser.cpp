#include <rlock/cli/commands.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/parser.hpp>
#include <rlock/lock/lease.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>

using namespace std::chrono_literals;
using namespace rlock::cli;

namespace {

// The one server a deployment names; fails the case for another topology.
const rlock::redis::Endpoint&
endpoint_of(const rlock::lock::Deployment& deployment) {
  const auto* single = std::get_if<rlock::lock::Single>(&deployment.topology);
  REQUIRE(single);
  return single->endpoint;
}

// The quorum a deployment names; fails the case for another topology.
const rlock::lock::Quorum&
quorum_of(const rlock::lock::Deployment& deployment) {
  const auto* quorum = std::get_if<rlock::lock::Quorum>(&deployment.topology);
  REQUIRE(quorum);
  return *quorum;
}

ParsedCommand
parse(std::vector<std::string> args, Environment environment = {}) {
  return parse_command_line(args, environment);
}

RunOptions
parse_run(std::vector<std::string> args, Environment environment = {}) {
  auto command = parse(std::move(args), std::move(environment));
  REQUIRE(std::holds_alternative<RunOptions>(command));
  return std::get<RunOptions>(command);
}

// Returns the usage error's message; fails when there is none.
std::string
usage_error(std::vector<std::string> args) {
  try {
    parse(args);
  } catch (const rlock::Error& e) {
    CHECK(rlock::exit_code::for_error(e.kind()) == 64);
    return e.what();
  }
  FAIL("no usage error");
  return {};
}

} // namespace

TEST_CASE("flags after COMMAND belong to the child") {
  const auto options = parse_run({"-n", "n", "ls", "-l", "--ttl", "5"});
  CHECK(options.name == "n");
  CHECK(options.waiting.nonblock);
  CHECK(options.command == std::vector<std::string>{"ls", "-l", "--ttl", "5"});
  CHECK(options.timing.ttl == 30s);
}

TEST_CASE("options before NAME with their values") {
  const auto options = parse_run({"-t",
                                  "10s",
                                  "--wait=2m",
                                  "-E",
                                  "3",
                                  "--kill-signal",
                                  "int",
                                  "--kill-after",
                                  "1s",
                                  "-v",
                                  "name",
                                  "cmd"});
  CHECK(options.timing.ttl == 10s);
  CHECK(options.waiting.wait == 2min);
  CHECK_FALSE(options.waiting.nonblock);
  CHECK(options.waiting.conflict_exit_code == 3);
  CHECK(options.kill_signal == SIGINT);
  CHECK(options.timing.kill_after == 1s);
  CHECK(options.log_level == rlock::log::Level::verbose);
}

TEST_CASE("clustered short options and attached values") {
  const auto options = parse_run({"-nvt5", "x", "true"});
  CHECK(options.waiting.nonblock);
  CHECK(options.timing.ttl == 5s);
  CHECK(options.log_level == rlock::log::Level::verbose);
}

TEST_CASE("-w 0 is -n and --timeout is -w") {
  CHECK(parse_run({"-w", "0", "x", "true"}).waiting.nonblock);
  CHECK(parse_run({"--timeout", "3s", "x", "true"}).waiting.wait == 3s);
}

TEST_CASE("-n wins over -w, in either order, as in flock") {
  for (const auto& args : {std::vector<std::string>{"-n", "-w", "10", "x", "t"},
                           std::vector<std::string>{"-w", "10", "-n", "x", "t"},
                           std::vector<std::string>{"--nb", "-w5", "x", "t"}}) {
    const auto waiting = parse_run(args).waiting;
    CHECK(waiting.nonblock);
    CHECK_FALSE(waiting.wait);
  }
}

TEST_CASE("-c runs a shell command, before or after NAME") {
  const std::vector<std::string> expected{"/bin/sh", "-c", "echo a; exit 4"};
  CHECK(parse_run({"x", "-c", "echo a; exit 4"}).command == expected);
  CHECK(parse_run({"-c", "echo a; exit 4", "x"}).command == expected);
  CHECK(parse_run({"x", "--command=echo a; exit 4"}).command == expected);
}

TEST_CASE("-c runs the shell $SHELL names, as flock does; /bin/sh without") {
  Environment environment;
  environment.shell = "/bin/bash";
  CHECK(parse_run({"x", "-c", "[[ 1 ]]"}, environment).command
        == std::vector<std::string>{"/bin/bash", "-c", "[[ 1 ]]"});
  CHECK(parse_run({"x", "-c", "[[ 1 ]]"}).command
        == std::vector<std::string>{"/bin/sh", "-c", "[[ 1 ]]"});
  // A plain COMMAND is run as it is, whatever $SHELL says.
  CHECK(parse_run({"x", "true"}, environment).command
        == std::vector<std::string>{"true"});
}

TEST_CASE("a NAME that equals a subcommand works after --") {
  const auto options = parse_run({"-n", "--", "status", "echo", "hi"});
  CHECK(options.name == "status");
  CHECK(options.command == std::vector<std::string>{"echo", "hi"});
  CHECK(std::holds_alternative<StatusOptions>(parse({"status"})));
}

TEST_CASE("status takes names, --json and server options on either side") {
  auto command = parse({"--url", "redis://h:1", "status", "--json", "a", "b"});
  REQUIRE(std::holds_alternative<StatusOptions>(command));
  const auto& status = std::get<StatusOptions>(command);
  CHECK(status.json);
  CHECK(status.names == std::vector<std::string>{"a", "b"});
  CHECK(endpoint_of(status.server).port == 1);
  command = parse({"status", "--prefix", "p:"});
  CHECK(std::get<StatusOptions>(command).server.prefix == "p:");
}

TEST_CASE("the URL and prefix come from options, then the environment") {
  Environment environment;
  environment.rlock_url = "redis://from-rlock-url:1";
  environment.redis_url = "redis://from-redis-url:2";
  environment.rlock_prefix = "env:";
  auto options = parse_run({"x", "true"}, environment);
  CHECK(endpoint_of(options.server).host == "from-rlock-url");
  CHECK(options.server.prefix == "env:");
  environment.rlock_url.reset();
  CHECK(endpoint_of(parse_run({"x", "true"}, environment).server).host
        == "from-redis-url");
  options = parse_run(
      {"--url", "unix:///s.sock", "--prefix", "p:", "x", "true"}, environment);
  CHECK(endpoint_of(options.server).socket_path == "/s.sock");
  CHECK(options.server.prefix == "p:");
  options = parse_run({"x", "true"});
  CHECK(endpoint_of(options.server).address() == "127.0.0.1:6379");
  CHECK(options.server.prefix == "rlock:");
}

TEST_CASE("--help and --version are answers, not errors") {
  auto command = parse({"--help"});
  REQUIRE(std::holds_alternative<InfoRequest>(command));
  CHECK_THAT(std::get<InfoRequest>(command).text, Catch::Contains("--ttl"));
  command = parse({"status", "--help"});
  CHECK_THAT(std::get<InfoRequest>(command).text, Catch::Contains("--json"));
  command = parse({"-V"});
  CHECK_THAT(std::get<InfoRequest>(command).text, Catch::StartsWith("rlock "));
}

TEST_CASE("command_table: each entry's synopsis names it, every help shows "
          "it, and each command's options type has an entry") {
  const auto& table = command_table();
  // RunOptions (run mode) and InfoRequest (--help, --version) have none.
  CHECK(std::variant_size_v<ParsedCommand> == table.size() + 2);
  const auto top = std::get<InfoRequest>(parse({"--help"})).text;
  for (const auto& entry : table) {
    const std::string name(entry.name);
    const std::string usage(entry.usage);
    INFO(name);
    CHECK_THAT(usage, Catch::StartsWith("rlock " + name + " "));
    CHECK(find_command(name) == &entry);
    CHECK_THAT(top, Catch::Contains("\n       " + usage + "\n"));
    CHECK_THAT(std::get<InfoRequest>(parse({name, "--help"})).text,
               Catch::Contains("Usage: " + usage + "\n"));
  }
}

TEST_CASE("usage errors name the option and quote the value") {
  const std::vector<
      std::pair<std::vector<std::string>, std::vector<std::string>>>
      cases{
          {{"-t", "abc", "x", "true"}, {"--ttl", "'abc'"}},
          {{"-t", "0", "x", "true"}, {"--ttl", "'0'"}},
          {{"-w", "-1", "x", "true"}, {"--wait", "'-1'"}},
          {{"--kill-after", "1y", "x", "true"}, {"--kill-after", "'1y'"}},
          {{"--connect-timeout", "0", "x", "true"},
           {"--connect-timeout", "'0'"}},
          {{"--io-timeout", "x", "x", "true"}, {"--io-timeout", "'x'"}},
          {{"-E", "256", "x", "true"}, {"--conflict-exit-code", "'256'"}},
          {{"-E", "-1", "x", "true"}, {"--conflict-exit-code", "'-1'"}},
          {{"--kill-signal", "FOO", "x", "true"}, {"--kill-signal", "'FOO'"}},
          {{"--url", "http://x", "x", "true"}, {"--url", "'http://x'"}},
          {{"x\ny", "true"}, {"NAME", "'x\\ny'"}},
          {{"", "true"}, {"NAME", "''"}},
          {{"--bogus", "x", "true"}, {"'--bogus'"}},
          {{}, {"missing NAME"}},
          {{"x"}, {"missing COMMAND", "'x'"}},
          {{"x", "-c", "true", "extra"}, {"--command", "'extra'"}},
          {{"-t", "30s", "--kill-after", "25s", "x", "true"},
           {"--kill-after 25s"}},
          {{"-v", "-q", "x", "true"}, {"--verbose", "--quiet"}},
          {{"status", "a\tb"}, {"NAME", "'a\\tb'"}},
          {{"--restart-grace", "-1s", "x", "true"},
           {"--restart-grace", "'-1s'"}},
          {{"acquire", "--restart-grace", "soon", "x"},
           {"--restart-grace", "'soon'"}},
      };
  for (const auto& [args, fragments] : cases) {
    const auto message = usage_error(args);
    INFO(message);
    CHECK(message.find('\n') == std::string::npos);
    for (const auto& fragment : fragments) {
      CHECK_THAT(message, Catch::Contains(fragment));
    }
  }
}

TEST_CASE("--restart-grace, then $RLOCK_RESTART_GRACE, then 30s; 0 is off") {
  CHECK(parse_run({"x", "true"}).server.restart_grace.length == 30s);
  Environment environment;
  environment.restart_grace = "45s";
  CHECK(parse_run({"x", "true"}, environment).server.restart_grace.length
        == 45s);
  CHECK(parse_run({"--restart-grace", "0", "x", "true"}, environment)
            .server.restart_grace.length
        == 0s);
  const auto acquire = parse({"acquire", "--restart-grace=2m", "x"});
  CHECK(std::get<AcquireOptions>(acquire).server.restart_grace.length == 2min);
  const auto wait = parse({"wait", "x"}, environment);
  CHECK(std::get<WaitFreeOptions>(wait).server.restart_grace.length == 45s);
  // Only the commands that take a lock or wait for one have it.
  CHECK_FALSE(usage_error({"check", "--restart-grace", "1s", "x"}).empty());
  environment.restart_grace = "1y";
  try {
    parse({"x", "true"}, environment);
    FAIL("no usage error");
  } catch (const rlock::Error& e) {
    CHECK(rlock::exit_code::for_error(e.kind()) == 64);
    CHECK_THAT(e.what(),
               Catch::Contains("RLOCK_RESTART_GRACE")
                   && Catch::Contains("'1y'"));
  }
}

TEST_CASE("the password comes from --password-file, the URL, then the "
          "environment") {
  const std::string file =
      "/tmp/rlock-unit-password-" + std::to_string(getpid());
  std::ofstream(file) << "from-file\r\nsecond line\n";
  Environment environment;
  environment.rlock_password = "from-rlock-password";
  environment.rediscli_auth = "from-rediscli-auth";
  auto password = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"x", "true"});
    return endpoint_of(parse_run(args, environment).server).password;
  };
  CHECK(password({"--password-file", file}) == "from-file");
  CHECK(password({"--password-file", file, "--url", "redis://:inurl@h"})
        == "from-file");
  CHECK(password({"--url", "redis://:inurl@h"}) == "inurl");
  CHECK(password({}) == "from-rlock-password");
  environment.rlock_password.reset();
  CHECK(password({}) == "from-rediscli-auth");
  environment.rediscli_auth.reset();
  CHECK(password({}).empty());
  std::remove(file.c_str());
}

TEST_CASE("TLS options need a rediss:// URL and readable files") {
  const auto tls = parse_run({"--url",
                              "rediss://h:6380",
                              "--tls-server-name",
                              "redis.example",
                              "--tls-ca",
                              "/dev/null",
                              "--tls-insecure",
                              "x",
                              "true"},
                             {})
                       .server;
  CHECK(endpoint_of(tls).tls);
  CHECK(tls.connect.tls.server_name == "redis.example");
  CHECK(tls.connect.tls.ca_file == "/dev/null");
  CHECK(tls.connect.tls.insecure);
  CHECK_THROWS_WITH(parse_run({"--tls-ca", "/dev/null", "x", "true"}, {}),
                    "--tls-ca needs a rediss:// URL (--url is not one)");
  CHECK_THROWS_WITH(
      parse_run({"--url", "rediss://h", "--tls-ca", "/nonexistent", "x", "y"},
                {}),
      "--tls-ca: cannot read '/nonexistent': No such file or directory");
  CHECK_THROWS_WITH(
      parse_run({"--url", "rediss://h", "--tls-cert", "/dev/null", "x", "y"},
                {}),
      "--tls-cert needs --tls-key");
}

TEST_CASE("a valued option given twice takes the last value") {
  auto options = parse_run({"-t",
                            "5s",
                            "-t",
                            "6s",
                            "-w",
                            "1s",
                            "-w",
                            "2s",
                            "-c",
                            "a",
                            "-c",
                            "b",
                            "x"});
  CHECK(options.timing.ttl == 6s);
  CHECK(options.waiting.wait == 2s);
  CHECK(options.command == std::vector<std::string>{"/bin/sh", "-c", "b"});
  const auto step = parse({"acquire", "-t", "1s", "--ttl", "2s", "x"});
  CHECK(std::get<AcquireOptions>(step).ttl == 2s);
}

TEST_CASE("edge cases of the command line give a usage error that says why") {
  const std::vector<
      std::pair<std::vector<std::string>, std::vector<std::string>>>
      cases{
          {{"acquire", "a", "b"}, {"unexpected argument 'b'"}},
          {{"release", "--force", "a", "b"}, {"unexpected argument 'b'"}},
          {{"-n=1", "n", "true"}, {"-n: takes no value", "'-n=1'"}},
          {{"acquire", "-n=1", "n"}, {"-n: takes no value", "'-n=1'"}},
          {{"n", "-c", ""}, {"--command", "empty"}},
          {{"n", "--command="}, {"--command", "empty"}},
          {{"-c", "", "n"}, {"--command", "empty"}},
          {{"--once-per", "1700000h", "n", "true"},
           {"--once-per", "'1700000h'"}},
      };
  for (const auto& [args, fragments] : cases) {
    const auto message = usage_error(args);
    INFO(message);
    CHECK(message.find('\n') == std::string::npos);
    for (const auto& fragment : fragments) {
      CHECK_THAT(message, Catch::Contains(fragment));
    }
  }
  CHECK(parse_run({"--once-per", "876000h", "n", "true"}).once_per
        == std::chrono::hours(876000));
}

TEST_CASE("$RLOCK_TOKEN counts only for the lock $RLOCK_NAME names") {
  Environment environment;
  environment.rlock_token = "0123456789abcdef0123456789abcdef";
  environment.rlock_name = "outer";
  const auto token = [&](std::vector<std::string> args) {
    return std::visit(
        [](const auto& options) -> std::string {
          if constexpr (requires { options.token; }) {
            return options.token;
          }
          FAIL("no token");
          return {};
        },
        parse(std::move(args), environment));
  };
  CHECK(token({"release", "outer"}) == *environment.rlock_token);
  CHECK(token({"check", "--token", "t", "inner"}) == "t");
  const auto error = [&](std::vector<std::string> args) {
    try {
      parse(std::move(args), environment);
    } catch (const rlock::Error& e) {
      CHECK(rlock::exit_code::for_error(e.kind()) == 64);
      return std::string(e.what());
    }
    FAIL("no usage error");
    return std::string();
  };
  CHECK_THAT(error({"release", "inner"}),
             Catch::Contains("$RLOCK_TOKEN is the token of 'outer'")
                 && Catch::Contains("not of 'inner'"));
  CHECK_THAT(error({"extend", "inner"}), Catch::Contains("--token"));
  environment.rlock_name.reset();
  CHECK_THAT(error({"check", "outer"}),
             Catch::Contains("$RLOCK_NAME is not set"));
}

TEST_CASE("each step command reads the options it takes, and only those") {
  const auto acquire = std::get<AcquireOptions>(parse(
      {"acquire", "-t", "1m", "--limit", "3", "--json", "-w", "2s", "a"}));
  CHECK(acquire.name == "a");
  CHECK(acquire.ttl == 1min);
  CHECK(acquire.limit == 3);
  CHECK(acquire.output == AcquireOptions::Output::json);
  CHECK(acquire.waiting.wait == 2s);
  const auto shared =
      std::get<AcquireOptions>(parse({"acquire", "--shared", "--env", "a"}));
  CHECK(shared.limit == rlock::lock::k_shared_limit);
  CHECK(shared.output == AcquireOptions::Output::env);
  // -t is extend's new length, not a lease of its own.
  const auto extend = std::get<ExtendOptions>(
      parse({"extend", "--token", "t1", "-t", "1m", "e"}));
  CHECK(extend.name == "e");
  CHECK(extend.token == "t1");
  CHECK(extend.length == 1min);
  const auto release =
      std::get<ReleaseOptions>(parse({"release", "--force", "r"}));
  CHECK(release.name == "r");
  CHECK(release.force);
  CHECK(release.token.empty());
  CHECK(std::get<ReleaseOptions>(parse({"release", "--token", "t2", "r"})).token
        == "t2");
  const auto check = std::get<CheckOptions>(
      parse({"check", "--token", "t3", "--min-validity", "3s", "c"}));
  CHECK(check.name == "c");
  CHECK(check.token == "t3");
  CHECK(check.min_validity == 3s);
  const auto wait =
      std::get<WaitFreeOptions>(parse({"wait", "-w", "4s", "-E", "9", "w"}));
  CHECK(wait.name == "w");
  CHECK(wait.waiting.wait == 4s);
  CHECK(wait.waiting.conflict_exit_code == 9);
  // What one command takes, another refuses.
  CHECK_THAT(usage_error({"release", "-t", "1m", "--token", "t", "r"}),
             Catch::Contains("'-t'"));
  CHECK_THAT(usage_error({"extend", "--force", "--token", "t", "e"}),
             Catch::Contains("'--force'"));
  CHECK_THAT(usage_error({"check", "--shared", "--token", "t", "c"}),
             Catch::Contains("'--shared'"));
  CHECK_THAT(usage_error({"wait", "--min-validity", "1s", "w"}),
             Catch::Contains("'--min-validity'"));
}

TEST_CASE("each default is the one the help text shows") {
  namespace d = rlock::cli::defaults;
  CHECK(d::help_text(30s) == "30s");
  CHECK(d::help_text(5min) == "5m");
  CHECK(d::help_text(2h) == "2h");
  CHECK(d::help_text(90s) == "90s");
  CHECK(d::help_text(500ms) == "500ms");
  const auto help = [](std::vector<std::string> args) {
    return std::get<InfoRequest>(parse(std::move(args))).text;
  };
  const auto run = parse_run({"x", "true"});
  CHECK(run.timing.ttl == d::k_run_ttl);
  CHECK(run.server.prefix == d::k_prefix);
  CHECK(run.server.connect.connect_timeout == d::k_connect_timeout);
  CHECK(run.server.connect.io_timeout == d::k_io_timeout);
  CHECK(run.server.restart_grace.length == d::k_restart_grace);
  CHECK(run.waiting.conflict_exit_code == d::k_conflict_exit_code);
  CHECK(run.kill_signal == d::k_kill_signal);
  CHECK_THAT(help({"--help"}),
             Catch::Contains("renewed every TTL/3 (30s)")
                 && Catch::Contains("per connection attempt (2s)")
                 && Catch::Contains("per reply (5s)")
                 && Catch::Contains("($RLOCK_PREFIX, rlock:)")
                 && Catch::Contains("0..255 (75)")
                 && Catch::Contains("on lock loss (TERM)")
                 && Catch::Contains("($RLOCK_RESTART_GRACE, 30s)"));
  const auto acquire = std::get<AcquireOptions>(parse({"acquire", "x"}));
  CHECK(acquire.ttl == d::k_acquire_ttl);
  CHECK_THAT(help({"acquire", "--help"}), Catch::Contains("not renewed (5m)"));
  // -E's default, in the exit codes each help lists.
  CHECK_THAT(help({"--help"}), Catch::Contains("lock lost, 75 not acquired,"));
  CHECK_THAT(help({"acquire", "--help"}),
             Catch::Contains("75 not acquired (-E)"));
  CHECK_THAT(help({"wait", "--help"}), Catch::Contains("75 -w ran out (-E)"));
  CHECK(std::get<ExtendOptions>(parse({"extend", "--token", "t", "x"})).length
        == std::nullopt);
  CHECK(std::get<DoctorOptions>(parse({"doctor"})).timing.ttl
        == d::k_doctor_ttl);
  CHECK_THAT(help({"status", "--help"}),
             Catch::Contains("redraw every D (2s)"));
}

TEST_CASE("a sentinel URL: the sentinels, the master, one replica to confirm") {
  using Mode = rlock::lock::ReplicaPolicy::Mode;
  Environment environment;
  environment.sentinel_password = "s3cret";
  environment.rlock_password = "datapw";
  const auto options = parse_run(
      {"--url", "redis+sentinel://a:1,b/mymaster/2", "x", "true"}, environment);
  const auto* found =
      std::get_if<rlock::lock::Sentinel>(&options.server.topology);
  REQUIRE(found);
  const auto& sentinel = found->master;
  CHECK(sentinel.name == "mymaster");
  REQUIRE(sentinel.sentinels.size() == 2);
  CHECK(sentinel.sentinels[0].address() == "a:1");
  CHECK(sentinel.sentinels[1].address() == "b:26379");
  CHECK(sentinel.sentinels[1].password == "s3cret");
  CHECK(sentinel.data_node.password == "datapw");
  CHECK(sentinel.data_node.db == 2);
  // A fixed count: a master with no replica fails closed (auto would ask
  // for none there).
  CHECK(options.server.replicas.mode == Mode::count);
  CHECK(options.server.replicas.count == 1);
  CHECK(options.server.replicas.timeout == 1s);
  // One server: no confirmation unless asked for.
  const auto plain = parse_run({"x", "true"});
  CHECK(std::holds_alternative<rlock::lock::Single>(plain.server.topology));
  CHECK(plain.server.replicas.mode == Mode::count);
  CHECK(plain.server.replicas.count == 0);
}

TEST_CASE("--replicas: a count, all or auto; $RLOCK_REPLICAS") {
  using Mode = rlock::lock::ReplicaPolicy::Mode;
  const auto replicas = [](std::vector<std::string> args,
                           Environment environment = {}) {
    args.insert(args.end(), {"x", "true"});
    return parse_run(std::move(args), std::move(environment)).server.replicas;
  };
  CHECK(replicas({"--replicas", "2"}).count == 2);
  CHECK(replicas({"--replicas", "all"}).mode == Mode::all);
  CHECK(replicas({"--replicas=auto"}).mode == Mode::automatic);
  CHECK(replicas({"--replicas", "0", "--replicas-timeout", "250ms"}).timeout
        == 250ms);
  Environment environment;
  environment.replicas = "3";
  CHECK(replicas({}, environment).count == 3);
  CHECK(replicas({"--replicas", "1"}, environment).count == 1);
  CHECK_THAT(usage_error({"--replicas", "x", "n", "true"}),
             Catch::Contains("--replicas") && Catch::Contains("'x'"));
  CHECK_THAT(usage_error({"--replicas", "-1", "n", "true"}),
             Catch::Contains("--replicas") && Catch::Contains("'-1'"));
  CHECK_THAT(usage_error({"--replicas-timeout", "0", "n", "true"}),
             Catch::Contains("--replicas-timeout"));
  environment.replicas = "many";
  try {
    parse({"x", "true"}, environment);
    FAIL("no usage error");
  } catch (const rlock::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("RLOCK_REPLICAS"));
  }
}

TEST_CASE("a Cluster URL gives the seeds and one replica to confirm") {
  const auto options = std::get<RunOptions>(
      parse({"--url", "redis+cluster://a:7000,[::1]:7001", "n", "true"}));
  const auto* cluster =
      std::get_if<rlock::lock::Cluster>(&options.server.topology);
  REQUIRE(cluster);
  CHECK(cluster->seeds.seeds
        == std::vector<rlock::redis::HostPort>{{"a", 7000}, {"::1", 7001}});
  CHECK(options.server.replicas.mode
        == rlock::lock::ReplicaPolicy::Mode::count);
  CHECK(options.server.replicas.count == 1);
}

TEST_CASE("Sentinel and Cluster URLs that cannot be used are usage errors") {
  CHECK_THAT(usage_error({"--url", "redis+sentinel://a,,b/m", "n", "true"}),
             Catch::Contains("--url") && Catch::Contains("empty host"));
  CHECK_THAT(usage_error({"--url", "redis+sentinel://a", "n", "true"}),
             Catch::Contains("--url"));
  CHECK_THAT(usage_error({"--url", "redis+cluster://a:1/3", "n", "true"}),
             Catch::Contains("--url"));
  CHECK_THAT(
      usage_error(
          {"--url", "redis+cluster://a:1", "--prefix", "app{x}:", "n", "true"}),
      Catch::Contains("--prefix") && Catch::Contains("'app{x}:'"));
  CHECK_THAT(
      usage_error({"--sentinel-password-file", "/dev/null", "n", "true"}),
      Catch::Contains("--sentinel-password-file")
          && Catch::Contains("redis+sentinel://"));
}

TEST_CASE("--url given 3 or more times is a quorum of servers; --quorum is "
          "a majority of them") {
  auto server = parse_run({"--url",
                           "redis://a:1",
                           "--url",
                           "redis://b:2",
                           "--url",
                           "rediss://c:3",
                           "x",
                           "true"})
                    .server;
  const auto& three = quorum_of(server);
  REQUIRE(three.members.size() == 3);
  CHECK(std::get<rlock::lock::Single>(three.members[0].where).endpoint.host
        == "a");
  CHECK(std::get<rlock::lock::Single>(three.members[2].where).endpoint.tls);
  CHECK(three.quorum == 2);
  Environment environment;
  environment.rlock_url =
      "redis://a:1 redis://b:2  redis://c:3\tredis://d:4 redis://e:5";
  server = parse_run({"--quorum", "4", "x", "true"}, environment).server;
  CHECK(quorum_of(server).members.size() == 5);
  CHECK(quorum_of(server).quorum == 4);
  // --url wins over $RLOCK_URL, as with one URL.
  server = parse_run({"--url", "redis://z:9", "x", "true"}, environment).server;
  CHECK(endpoint_of(server).host == "z");
}

TEST_CASE("a quorum's usage errors name the option and the value") {
  const std::vector<std::string> three{
      "--url", "redis://a:1", "--url", "redis://b:2", "--url", "redis://c:3"};
  auto with = [&](std::vector<std::string> more) {
    auto args = three;
    args.insert(args.end(), more.begin(), more.end());
    return usage_error(args);
  };
  CHECK(usage_error({"--url", "redis://a:1", "--url", "redis://b:2", "x", "y"})
        == "--url: a quorum needs at least 3 servers, got 2");
  CHECK(with({"--quorum", "1", "x", "y"})
        == "--quorum: must be a majority of the 3 servers (2..3), got '1'");
  CHECK(with({"--quorum", "4", "x", "y"})
        == "--quorum: must be a majority of the 3 servers (2..3), got '4'");
  CHECK(with({"--quorum", "2x", "x", "y"})
        == "--quorum: must be a majority of the 3 servers (2..3), got '2x'");
  CHECK(usage_error({"--quorum", "2", "x", "y"})
        == "--quorum: needs several --url (a quorum of servers)");
  CHECK(
      with({"--fair", "x", "y"}).starts_with("--fair: not with several --url"));
  CHECK(with({"--url", "redis+cluster://d:4", "x", "y"})
        == "--url: a Redis Cluster cannot be one of a quorum's servers (it is "
           "one deployment), got 'redis+cluster://d:4'");
  CHECK(with({"--url", "redis://b:2", "x", "y"})
        == "--url: 'redis://b:2' is named twice (a quorum needs independent "
           "servers)");
}

TEST_CASE("redis://word@host: the password, unless one comes another way, "
          "then the user") {
  auto server = parse_run({"--url", "redis://alice@h:1", "x", "true"}).server;
  CHECK(endpoint_of(server).user.empty());
  CHECK(endpoint_of(server).password == "alice");
  Environment environment;
  environment.rlock_password = "pw";
  server = parse_run({"--url", "redis://alice@h:1", "x", "true"}, environment)
               .server;
  CHECK(endpoint_of(server).user == "alice");
  CHECK(endpoint_of(server).password == "pw");
  // A URL with both keeps its own password.
  server =
      parse_run({"--url", "redis://bob:url-pw@h:1", "x", "true"}, environment)
          .server;
  CHECK(endpoint_of(server).user == "bob");
  CHECK(endpoint_of(server).password == "url-pw");
}
