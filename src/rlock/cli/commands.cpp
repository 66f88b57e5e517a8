#include <rlock/cli/commands.hpp>

#include <algorithm>

namespace rlock::cli {

const std::vector<CommandEntry>&
command_table() {
  static const std::vector<CommandEntry> table{
      {"status",
       "show who holds which lock",
       "rlock status [--json|--wide] [--match GLOB] [--watch [-i D]] "
       "[NAME...]",
       ""},
      {"acquire",
       "take the lock for a script; print the token",
       "rlock acquire [-n|-w D] [-t D] [--fair] [--json|--env] NAME",
       "Exit: 0 acquired (token on stdout), 75 not acquired (-E), 69 Redis\n"
       "unavailable. Example: eval \"$(rlock acquire --env NAME)\""},
      {"extend",
       "extend a lock taken with acquire",
       "rlock extend [--token T] [-t D] NAME",
       "Exit: 0 extended, 1 not held by that token."},
      {"release",
       "release a lock taken with acquire",
       "rlock release [--token T | --force] NAME",
       "Exit: 0 released, 1 not held by that token (or free, with --force)."},
      {"check",
       "tell whether the token still holds the lock",
       "rlock check [--token T] [--min-validity D] NAME",
       "Exit: 0 the token holds the lock with at least --min-validity left,\n"
       "1 otherwise."},
      {"wait",
       "wait until the lock is free, without taking it",
       "rlock wait [-w D] NAME",
       "Exit: 0 the lock is free, 75 -w ran out (-E)."},
      {"doctor",
       "check that Redis keeps locks safe",
       "rlock doctor [-t D] [--json]",
       ""},
  };
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

} // namespace rlock::cli
