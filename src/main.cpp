// main() only parses the command line, dispatches and turns the one error
// type into its message and exit code.
#include <rlock/cli/commands.hpp>
#include <rlock/cli/exit_codes.hpp>
#include <rlock/cli/parser.hpp>
#include <rlock/proc/process_title.hpp>
#include <rlock/proc/termination.hpp>
#include <rlock/redis/failure.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/log.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Opens /dev/null on each of fds 0-2 that is closed, as gnulib's stdopen
// does, so that no socket rlock opens becomes stdout or stderr and takes our
// output. Opened the wrong way round (stdin for writing, stdout and stderr
// for reading), so that using them still fails as a closed fd does: output
// that could not be written is reported, not lost in silence.
void
open_closed_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
      continue;
    }
    const int opened = ::open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
    if (opened != fd) {
      // Failed, or fd was taken meanwhile: nothing safe to write to.
      std::_Exit(rlock::exit_code::k_os_error);
    }
  }
}

std::optional<std::string>
env(const char* name) {
  // CI systems often export variables empty: empty counts as unset.
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::optional<std::string>(value)
                                            : std::nullopt;
}

// Flushes stdout and reports a failed write, so `rlock status >/dev/full`
// does not exit 0.
int
close_stdout(int exit_code) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    rlock::log::error(std::string("cannot write output: ")
                      + std::strerror(errno));
    return rlock::exit_code::k_io_error;
  }
  return exit_code;
}

// A command refused by the server's ACL (NOPERM; from inside a script Redis
// 7.0 says ERR ... can't run this command) is the operator's to allow: the
// message says where the rule rlock needs is written.
std::string
with_acl_hint(const rlock::redis::Failure& failure) {
  const bool refused_by_acl =
      failure.server_code() == "NOPERM"
      || failure.server_error().find("can't run this command")
             != std::string::npos;
  std::string message = failure.what();
  if (refused_by_acl) {
    message += "; the server's ACL refuses a command rlock needs: allow it "
               "(the rule rlock needs is in rlock(1), ACL)";
  }
  return message;
}

} // namespace

int
main(int argc, char** argv) {
  open_closed_std_fds();
  rlock::proc::remember_argv(argc, argv);
  // An ignored SIGCHLD is inherited across exec, and with it the kernel
  // reaps our children unseen: rlock would never see its command end.
  std::signal(SIGCHLD, SIG_DFL);
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    const rlock::cli::Environment environment{
        .rlock_url = env("RLOCK_URL"),
        .redis_url = env("REDIS_URL"),
        .rlock_prefix = env("RLOCK_PREFIX"),
        .rlock_token = env("RLOCK_TOKEN"),
        .rlock_password = env("RLOCK_PASSWORD"),
        .rlock_password_command = env("RLOCK_PASSWORD_COMMAND"),
        .rediscli_auth = env("REDISCLI_AUTH"),
        .rlock_name = env("RLOCK_NAME"),
        .rlock_compat = env("RLOCK_COMPAT"),
        .restart_grace = env("RLOCK_RESTART_GRACE"),
        .sentinel_password = env("RLOCK_SENTINEL_PASSWORD"),
        .replicas = env("RLOCK_REPLICAS"),
        .shell = env("SHELL")};
    const int code = close_stdout(rlock::cli::run_command(
        rlock::cli::parse_command_line(args, environment)));
    if (const int signal = rlock::proc::pending_end_signal()) {
      rlock::proc::die_by_signal(signal);
    }
    return code;
  } catch (const rlock::redis::Failure& e) {
    rlock::log::error(with_acl_hint(e));
    return rlock::exit_code::for_error(e.kind());
  } catch (const rlock::Error& e) {
    rlock::log::error(e.what());
    return rlock::exit_code::for_error(e.kind());
  } catch (const std::exception& e) {
    rlock::log::error(std::string("internal error: ") + e.what());
    return rlock::exit_code::k_os_error;
  }
}
