#include <rlock/proc/signals.hpp>
#include <rlock/util/integer.hpp>
#include <rlock/util/text.hpp>

#include <array>
#include <cctype>
#include <csignal>
#include <limits>
#include <utility>

namespace rlock::proc {

namespace {

const std::array<std::pair<std::string_view, int>, 31> k_signals{{
    {"HUP", SIGHUP},       {"INT", SIGINT},       {"QUIT", SIGQUIT},
    {"ILL", SIGILL},       {"TRAP", SIGTRAP},     {"ABRT", SIGABRT},
    {"BUS", SIGBUS},       {"FPE", SIGFPE},       {"KILL", SIGKILL},
    {"USR1", SIGUSR1},     {"SEGV", SIGSEGV},     {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},     {"ALRM", SIGALRM},     {"TERM", SIGTERM},
    {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD},     {"CONT", SIGCONT},
    {"STOP", SIGSTOP},     {"TSTP", SIGTSTP},     {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},     {"URG", SIGURG},       {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ},     {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},
    {"WINCH", SIGWINCH},   {"IO", SIGIO},         {"PWR", SIGPWR},
    {"SYS", SIGSYS},
}};

std::optional<int>
parse_number(std::string_view text) {
  const auto value = parse_integer(
      text, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  if (!value) {
    return std::nullopt;
  }
  return static_cast<int>(*value);
}

// Parses "RTMIN", "RTMIN+N", "RTMAX", "RTMAX-N".
std::optional<int>
parse_realtime(std::string_view name) {
  const bool from_min = name.starts_with("RTMIN");
  if (!from_min && !name.starts_with("RTMAX")) {
    return std::nullopt;
  }
  const auto rest = name.substr(5);
  int offset = 0;
  if (!rest.empty()) {
    const auto number = parse_number(rest.substr(1));
    if (rest.front() != (from_min ? '+' : '-') || !number) {
      return std::nullopt;
    }
    offset = from_min ? *number : -*number;
  }
  const int signal = (from_min ? SIGRTMIN : SIGRTMAX) + offset;
  if (signal < SIGRTMIN || signal > SIGRTMAX) {
    return std::nullopt;
  }
  return signal;
}

} // namespace

Expected<int>
parse_signal(std::string_view text) {
  if (const auto number = parse_number(text)) {
    if (*number >= 1 && *number <= SIGRTMAX) {
      return *number;
    }
    return Expected<int>::failure("invalid signal number " + quote(text)
                                  + " (1 to " + std::to_string(SIGRTMAX) + ")");
  }
  std::string name;
  for (char c : text) {
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  const std::string_view bare = std::string_view(name).starts_with("SIG")
                                    ? std::string_view(name).substr(3)
                                    : std::string_view(name);
  for (const auto& [signal_name, number] : k_signals) {
    if (bare == signal_name) {
      return number;
    }
  }
  if (const auto realtime = parse_realtime(bare)) {
    return *realtime;
  }
  return Expected<int>::failure("unknown signal " + quote(text));
}

std::string
signal_name(int signal) {
  for (const auto& [name, number] : k_signals) {
    if (number == signal) {
      return std::string(name);
    }
  }
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) {
    return signal == SIGRTMIN ? "RTMIN"
                              : "RTMIN+" + std::to_string(signal - SIGRTMIN);
  }
  return std::to_string(signal);
}

} // namespace rlock::proc
