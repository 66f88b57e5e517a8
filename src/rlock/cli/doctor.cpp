#include <rlock/cli/doctor.hpp>
#include <rlock/cli/doctor_checks.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/server.hpp>
#include <rlock/lock/store.hpp>
#include <rlock/util/error.hpp>

#include <cstdio>
#include <string>

namespace rlock::cli {

namespace {

void
write_out(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (std::fflush(stdout) != 0) {
    throw Error(ErrorKind::output, "cannot write output");
  }
}

} // namespace

int
run_doctor(const DoctorOptions& options) {
  const auto store = open_store(options.server);
  // One server today; a store over several examines each.
  const auto facts = store->examine().front();
  const auto checks = diagnose(facts, options.timing);
  write_out(options.json ? format_doctor_json(facts.address, checks)
                         : format_doctor_text(checks));
  return doctor_exit_code(checks);
}

} // namespace rlock::cli
