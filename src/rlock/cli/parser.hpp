#pragma once

#include <rlock/cli/options.hpp>

#include <string>
#include <vector>

namespace rlock::cli {

// Parses the arguments after argv[0]. Option parsing stops at NAME:
// everything after it is the command, except a -c STR right after NAME.
// Throws Error (usage) with one line naming the option and quoting the value.
ParsedCommand parse_command_line(const std::vector<std::string>& args,
                                 const Environment& environment);

// Returns the --version text.
std::string version_text();

} // namespace rlock::cli
