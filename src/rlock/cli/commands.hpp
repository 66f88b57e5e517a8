#pragma once

#include <rlock/cli/command_entry.hpp>
#include <rlock/cli/options.hpp>

#include <string_view>
#include <vector>

namespace rlock::cli {

// The subcommands, in the order help lists them.
const std::vector<CommandEntry>& command_table();

// Returns the entry named `name`, or nullptr.
const CommandEntry* find_command(std::string_view name);

// Runs a parsed command line and returns the exit code. Throws Error when
// the command fails in a way that has no exit code of its own.
int run_command(const ParsedCommand& command);

} // namespace rlock::cli
