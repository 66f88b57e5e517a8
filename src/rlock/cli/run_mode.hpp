// Run mode, `rlock [OPTIONS] NAME COMMAND`: the top level's own options.
#pragma once

#include <rlock/cli/options.hpp>
#include <rlock/cli/raw_options.hpp>

#include <string>
#include <vector>

namespace rlock::cli {

// Adds run mode's options to the top-level app.
void add_run_options(CLI::App& app, detail::RawOptions& raw);

// Checks what was typed and returns run mode's options; `rest` is what
// follows NAME: the command, or -c STR.
RunOptions run_options_of(const detail::RawOptions& raw,
                          const std::string& name,
                          const std::vector<std::string>& rest,
                          const Environment& environment);

} // namespace rlock::cli
