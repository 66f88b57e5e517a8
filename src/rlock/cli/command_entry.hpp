#pragma once

#include <rlock/cli/options.hpp>
#include <rlock/cli/raw_options.hpp>

#include <string>
#include <string_view>

namespace rlock::cli {

// One subcommand of rlock, as help, parsing, dispatch and the docs test know
// it. Each lives in its own file with its run function. Run mode (`rlock
// NAME COMMAND`) is the default, not an entry (cli/run_mode.hpp).
struct CommandEntry {
  std::string_view name;
  std::string_view summary; // one line, for `rlock --help`
  std::string_view usage;   // the synopsis, the same in every help text
  // What `rlock NAME --help` ends with; may be "". Built, not a literal,
  // where it prints a default (-E's code).
  std::string footer;
  // Adds the command's options, its own and the shared ones it takes.
  void (*add_options)(CLI::App& app, detail::RawOptions& raw);
  // Checks what was typed and returns the command's options.
  ParsedCommand (*options_of)(const detail::RawOptions& raw,
                              const Environment& environment);
};

} // namespace rlock::cli
