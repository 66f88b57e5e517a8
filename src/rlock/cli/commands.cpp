#include <rlock/cli/acquire.hpp>
#include <rlock/cli/check.hpp>
#include <rlock/cli/commands.hpp>
#include <rlock/cli/doctor.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/extend.hpp>
#include <rlock/cli/release.hpp>
#include <rlock/cli/run.hpp>
#include <rlock/cli/status.hpp>
#include <rlock/cli/wait.hpp>

#include <algorithm>
#include <cstdio>

namespace rlock::cli {

const std::vector<CommandEntry>&
command_table() {
  static const std::vector<CommandEntry> table{status_command(),
                                               acquire_command(),
                                               extend_command(),
                                               release_command(),
                                               check_command(),
                                               wait_command(),
                                               doctor_command()};
  return table;
}

const CommandEntry*
find_command(std::string_view name) {
  const auto& table = command_table();
  const auto found =
      std::find_if(table.begin(), table.end(), [name](const auto& entry) {
        return entry.name == name;
      });
  return found == table.end() ? nullptr : &*found;
}

namespace {

int
run(const InfoRequest& info) {
  std::fputs(info.text.c_str(), stdout);
  return exit_code::k_success;
}

} // namespace

int
run_command(const ParsedCommand& command) {
  return std::visit([](const auto& options) { return run(options); }, command);
}

} // namespace rlock::cli
