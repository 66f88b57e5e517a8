#include <rlock/proc/exit_status.hpp>

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <csignal>

using rlock::proc::shell_status_of_siginfo;
using rlock::proc::shell_status_of_wait_status;

TEST_CASE("shell_status_of_wait_status passes the child's code on") {
  CHECK(shell_status_of_wait_status(0) == 0);
  CHECK(shell_status_of_wait_status(3 << 8) == 3);
  CHECK(shell_status_of_wait_status(125 << 8) == 125);
  CHECK(shell_status_of_wait_status(255 << 8) == 255);
}

TEST_CASE("shell_status_of_wait_status maps signal N to 128+N") {
  CHECK(shell_status_of_wait_status(SIGTERM) == 143);
  CHECK(shell_status_of_wait_status(SIGKILL) == 137);
  CHECK(shell_status_of_wait_status(SIGINT | 0x80) == 130); // core dumped
}

TEST_CASE("shell_status_of_siginfo maps waitid results the same way") {
  CHECK(shell_status_of_siginfo(CLD_EXITED, 7) == 7);
  CHECK(shell_status_of_siginfo(CLD_KILLED, SIGTERM) == 143);
  CHECK(shell_status_of_siginfo(CLD_DUMPED, SIGSEGV) == 139);
}
