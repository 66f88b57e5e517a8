// rlock doctor's report (cli/doctor_report.cpp) for one server, and its
// command line. The checks of each topology have files of their own:
// test_cli_doctor_{server,sentinel,cluster,quorum}.cpp.

#include <rlock/cli/doctor_checks.hpp>
#include <rlock/cli/parser.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "doctor_facts.hpp"
#include "lines.hpp"

using namespace doctor_facts;

namespace {

ParsedCommand
parse(std::vector<std::string> args) {
  return parse_command_line(args, Environment{});
}

} // namespace

TEST_CASE("text: one aligned line per check, a server's text kept on it") {
  auto facts = healthy();
  facts.config["appendonly"] = "no";
  facts.info_error = "bad\nline";
  facts.info.clear();
  facts.config_error = "x";
  facts.config.erase("maxmemory-policy");
  const auto lines = lines_of(format_doctor_text(diagnose(facts, timing())));
  REQUIRE(lines.size() == 6);
  CHECK_THAT(lines[0], Catch::StartsWith("ok      version      Redis 7.0.15"));
  CHECK_THAT(lines[1], Catch::StartsWith("unknown eviction     "));
  CHECK_THAT(lines[1], Catch::Contains("bad\\nline"));
  CHECK_THAT(lines[2], Catch::StartsWith("warn    persistence  appendonly no"));
  CHECK_THAT(lines[3], Catch::StartsWith("unknown replication  role unknown"));
  CHECK_THAT(lines[4], Catch::StartsWith("ok      latency      round trip"));
  CHECK_THAT(lines[5], Catch::StartsWith("ok      clock        the server's"));
}

TEST_CASE("JSON: the server, the worst status, one entry per check") {
  auto facts = healthy();
  auto document = nlohmann::json::parse(
      format_doctor_json(facts.address, diagnose(facts, timing())));
  CHECK(document["server"] == "127.0.0.1:6379");
  CHECK(document["status"] == "ok");
  REQUIRE(document["checks"].size() == 6);
  for (const auto& [name, entry] : document["checks"].items()) {
    INFO(name);
    CHECK(entry.size() == 3);
    CHECK(entry["status"] == "ok");
    CHECK(entry["message"].is_string());
    CHECK(entry["values"].is_object());
  }
  CHECK(document["checks"]["eviction"]["values"]["maxmemory_policy"]
        == "noeviction");
  facts.info["connected_slaves"] = "1";
  document = nlohmann::json::parse(
      format_doctor_json(facts.address, diagnose(facts, timing())));
  CHECK(document["status"] == "warn");
  facts.info["role"] = "slave";
  facts.clock_offset_ms.reset();
  const auto checks = diagnose(facts, timing());
  document = nlohmann::json::parse(format_doctor_json(facts.address, checks));
  CHECK(document["status"] == "fail");
  CHECK(document["checks"]["clock"]["status"] == "unknown");
  CHECK(doctor_exit_code(checks) == 1);
}

TEST_CASE("the exit code is 0 only when every check is ok") {
  auto checks = diagnose(healthy(), timing());
  CHECK(doctor_exit_code(checks) == 0);
  for (auto status :
       {CheckStatus::warn, CheckStatus::fail, CheckStatus::unknown}) {
    auto changed = checks;
    changed.back().status = status;
    CHECK(doctor_exit_code(changed) == 1);
  }
}

TEST_CASE("name on one server: its key on that server, ok") {
  const NamedLock lock{"deploy", "rlock:deploy"};
  const auto result = check_name(lock, "127.0.0.1:6379", {});
  CHECK(result.status == CheckStatus::ok);
  CHECK(result.message
        == "lock 'deploy' is key 'rlock:deploy' on 127.0.0.1:6379");
  CHECK(result.values["slot"].is_null());
}

TEST_CASE(
    "one server's report with NAME: its six checks, then name, in one list") {
  const auto report = diagnose_all(
      {healthy()}, timing(), {}, NamedLock{"deploy", "rlock:deploy"});
  CHECK_FALSE(report.cluster);
  REQUIRE(report.servers.size() == 1);
  CHECK(report.servers[0].checks.size() == 6);
  REQUIRE(report.deployment.size() == 1);
  const auto lines = lines_of(format_doctor_text(report));
  REQUIRE(lines.size() == 7);
  CHECK_THAT(lines[6], Catch::StartsWith("ok      name         lock 'deploy'"));
  const auto document = nlohmann::json::parse(format_doctor_json(report));
  CHECK(document["server"] == "127.0.0.1:6379");
  CHECK(document["status"] == "ok");
  CHECK(document["checks"].size() == 7);
  CHECK(document["checks"]["name"]["values"]["key"] == "rlock:deploy");
  CHECK(doctor_exit_code(report) == 0);
}

TEST_CASE("doctor's command line: NAME, --json, -t; a bad one throws") {
  auto command = parse({"doctor"});
  REQUIRE(std::holds_alternative<DoctorOptions>(command));
  CHECK(std::get<DoctorOptions>(command).timing.ttl == 30s);
  CHECK(std::get<DoctorOptions>(command).timing.margin == 305ms);
  CHECK_FALSE(std::get<DoctorOptions>(command).json);
  command = parse({"--url", "redis://h:1", "doctor", "--json", "-t", "5s"});
  REQUIRE(std::holds_alternative<DoctorOptions>(command));
  const auto& options = std::get<DoctorOptions>(command);
  CHECK(options.json);
  CHECK(options.timing.ttl == 5s);
  CHECK(std::get<rlock::lock::Single>(options.server.topology).endpoint.port
        == 1);
  CHECK_FALSE(options.name);
  command = parse({"doctor", "deploy", "--json"});
  REQUIRE(std::holds_alternative<DoctorOptions>(command));
  CHECK(std::get<DoctorOptions>(command).name == "deploy");
  CHECK_THROWS_AS(parse({"doctor", ""}), Error);
  CHECK(std::holds_alternative<InfoRequest>(parse({"doctor", "--help"})));
  // A lock named doctor needs --, as for any subcommand.
  CHECK(std::holds_alternative<RunOptions>(parse({"--", "doctor", "true"})));
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"doctor", "one", "two"},
                                             {"doctor", "--ttl", "50ms"},
                                             {"doctor", "--ttl", "0"},
                                             {"doctor", "--wide"},
                                             {"-n", "doctor"}}) {
    INFO(args.back());
    CHECK_THROWS_AS(parse(args), Error);
  }
}
