#include <rlock/cli/doctor_report.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/util/text.hpp>

#include <algorithm>

namespace rlock::cli {

using namespace doctor;

namespace {

constexpr std::size_t k_status_width = 8; // "unknown" and a space

constexpr std::size_t k_name_width = 13; // "persistence" and two spaces

int
rank(CheckStatus status) {
  switch (status) {
  case CheckStatus::ok:
    return 0;
  case CheckStatus::unknown:
    return 1;
  case CheckStatus::warn:
    return 2;
  case CheckStatus::fail:
    return 3;
  }
  return 3;
}

// Returns {NAME: {"status", "message", "values"}}; raises `worst`.
Json
checks_json(const std::vector<CheckResult>& checks, CheckStatus& worst) {
  auto entries = Json::object();
  for (const auto& check : checks) {
    if (rank(check.status) > rank(worst)) {
      worst = check.status;
    }
    entries[check.name] = {{"status", status_name(check.status)},
                           {"message", check.message},
                           {"values", check.values}};
  }
  return entries;
}

std::string
dump(const Json& document) {
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

// The checks of a deployment that is not a Cluster, in one list.
std::vector<CheckResult>
flattened(const DoctorReport& report) {
  std::vector<CheckResult> checks;
  for (const auto& server : report.servers) {
    checks.insert(checks.end(), server.checks.begin(), server.checks.end());
  }
  checks.insert(
      checks.end(), report.deployment.begin(), report.deployment.end());
  return checks;
}

} // namespace

std::string_view
status_name(CheckStatus status) {
  switch (status) {
  case CheckStatus::ok:
    return "ok";
  case CheckStatus::warn:
    return "warn";
  case CheckStatus::fail:
    return "fail";
  case CheckStatus::unknown:
    return "unknown";
  }
  return "unknown";
}

std::string
format_doctor_text(const std::vector<CheckResult>& checks) {
  std::string text;
  for (const auto& check : checks) {
    std::string status(status_name(check.status));
    status.resize(std::max(status.size() + 1, k_status_width), ' ');
    std::string name = check.name;
    name.resize(std::max(name.size() + 2, k_name_width), ' ');
    // Server replies may hold anything; one check stays one line.
    text += status + name + printable(check.message) + "\n";
  }
  return text;
}

std::string
format_doctor_json(const std::string& address,
                   const std::vector<CheckResult>& checks) {
  auto worst = CheckStatus::ok;
  auto entries = checks_json(checks, worst);
  return dump({{"server", address},
               {"status", status_name(worst)},
               {"checks", entries}});
}

int
doctor_exit_code(const std::vector<CheckResult>& checks) {
  const bool all_ok =
      std::all_of(checks.begin(), checks.end(), [](const auto& check) {
        return check.status == CheckStatus::ok;
      });
  return all_ok ? exit_code::k_success : exit_code::k_failure;
}

std::string
format_doctor_text(const DoctorReport& report) {
  if (!report.cluster && !report.quorum) {
    return format_doctor_text(flattened(report));
  }
  const std::string kind = report.cluster ? "master " : "server ";
  std::string text;
  for (const auto& server : report.servers) {
    text += kind + server.address
            + (server.slots.empty() ? "" : " (slots " + server.slots + ")")
            + (server.error.empty()
                   ? "\n" + format_doctor_text(server.checks)
                   : ": did not answer (" + printable(server.error) + ")\n")
            + "\n";
  }
  return text + (report.cluster ? "cluster\n" : "redlock\n")
         + format_doctor_text(report.deployment);
}

std::string
format_doctor_json(const DoctorReport& report) {
  if (!report.cluster && !report.quorum) {
    return format_doctor_json(
        report.servers.empty() ? "" : report.servers.front().address,
        flattened(report));
  }
  auto worst = CheckStatus::ok;
  auto servers = Json::array();
  for (const auto& server : report.servers) {
    auto server_worst =
        server.error.empty() ? CheckStatus::ok : CheckStatus::fail;
    auto entries = checks_json(server.checks, server_worst);
    Json entry = {{"server", server.address}};
    if (report.cluster) {
      entry["slots"] = server.slots;
    }
    entry["status"] = status_name(server_worst);
    entry["checks"] = entries;
    entry["error"] = error_json(server.error);
    servers.push_back(std::move(entry));
    worst = rank(server_worst) > rank(worst) ? server_worst : worst;
  }
  auto entries = checks_json(report.deployment, worst);
  return dump({{"status", status_name(worst)},
               {"checks", entries},
               {report.cluster ? "masters" : "servers", servers}});
}

int
doctor_exit_code(const DoctorReport& report) {
  const bool silent =
      std::any_of(report.servers.begin(),
                  report.servers.end(),
                  [](const auto& server) { return !server.error.empty(); });
  return silent ? exit_code::k_failure : doctor_exit_code(flattened(report));
}

} // namespace rlock::cli
