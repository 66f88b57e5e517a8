#pragma once

#include <string_view>
#include <vector>

namespace rlock::cli {

// One subcommand of rlock, as help, dispatch and the docs test know it. Run
// mode (`rlock NAME COMMAND`) is the default, not an entry.
struct CommandEntry {
  std::string_view name;
  std::string_view summary; // one line, for `rlock --help`
  std::string_view usage;   // the synopsis, the same in every help text
  std::string_view footer;  // what `rlock NAME --help` ends with; may be ""
};

// The subcommands, in the order help lists them.
const std::vector<CommandEntry>& command_table();

// Returns the entry named `name`, or nullptr.
const CommandEntry* find_command(std::string_view name);

} // namespace rlock::cli
