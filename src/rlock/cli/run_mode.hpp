// Run mode, `rlock [OPTIONS] NAME COMMAND`: the top level's own options.
#pragma once

#include <rlock/cli/options.hpp>
#include <rlock/cli/raw_options.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlock::cli {

// Run mode's synopses, in the order help and the man page list them.
inline constexpr std::string_view k_run_usages[] = {
    "rlock [OPTIONS] NAME COMMAND [ARG...]",
    "rlock [OPTIONS] NAME -c 'SHELL COMMAND'",
    "rlock [OPTIONS] -c 'SHELL COMMAND' NAME",
    "rlock [OPTIONS] -- NAME COMMAND [ARG...]",
};

// Adds run mode's options to the top-level app.
void add_run_options(CLI::App& app, detail::RawOptions& raw);

// Returns what to use instead of a flock(1) option that rlock refuses
// (`option` as typed: -s, --unlock, ...), nothing for any other option.
std::optional<std::string> flock_option_advice(const std::string& option);

// Checks what was typed and returns run mode's options; `rest` is what
// follows NAME: the command, or -c STR.
RunOptions run_options_of(const detail::RawOptions& raw,
                          const std::string& name,
                          const std::vector<std::string>& rest,
                          const Environment& environment);

} // namespace rlock::cli
