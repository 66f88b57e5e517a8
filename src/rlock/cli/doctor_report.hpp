#pragma once

#include <rlock/cli/doctor_check.hpp>

#include <string>
#include <string_view>
#include <vector>

// What doctor prints: the checks of each server and of the deployment, as
// aligned text or JSON, and the exit code they make.
namespace rlock::cli {

// The checks of one server: the only one, one master of a Cluster or one
// server of a quorum.
struct ServerChecks {
  std::string address;
  std::string slots; // a Cluster master's slots ("0-5460"); "" elsewhere
  std::vector<CheckResult> checks;
  std::string error; // a server that did not answer: why (no checks)
};

// What doctor prints: each server's checks, then the deployment's.
struct DoctorReport {
  bool cluster = false;
  bool quorum = false; // a quorum of independent servers (Redlock)
  std::vector<ServerChecks> servers;
  // Cluster: cluster, replicas, failover; a quorum: quorum, independent,
  // restarts, clocks; then name when NAME was given.
  std::vector<CheckResult> deployment;
};

// Returns "ok", "warn", "fail" or "unknown".
std::string_view status_name(CheckStatus status);

// Returns one aligned line per check: "warn    persistence  appendonly no...".
std::string format_doctor_text(const std::vector<CheckResult>& checks);

// Returns {"server", "status", "checks": {NAME: {"status", "message",
// "values"}}} as JSON with a trailing newline; "status" is the worst check's.
std::string format_doctor_json(const std::string& address,
                               const std::vector<CheckResult>& checks);

// Returns 0 when every check is ok, else 1.
int doctor_exit_code(const std::vector<CheckResult>& checks);

// Returns the report as format_doctor_text() does; a Cluster's in sections:
// "master ADDRESS (slots ...)" before each master's checks, "cluster" before
// the Cluster's, a blank line between them; a quorum's likewise with
// "server ADDRESS" and "redlock".
std::string format_doctor_text(const DoctorReport& report);

// Returns the report as format_doctor_json() does; a Cluster's as {"status",
// "checks": {the Cluster's}, "masters": [{"server", "slots", "status",
// "checks", "error"}]}, "status" the worst check's of them all (a master
// that did not answer: "fail", and "error" says why); a quorum's likewise
// with "servers": [{"server", "status", "checks", "error"}].
std::string format_doctor_json(const DoctorReport& report);

// Returns 0 when every check of the report is ok, else 1.
int doctor_exit_code(const DoctorReport& report);

} // namespace rlock::cli
