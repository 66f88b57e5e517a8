#include <rlock/proc/exit_status.hpp>

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <csignal>

using rlock::proc::exit_code_of_siginfo;
using rlock::proc::exit_code_of_wait_status;

TEST_CASE("exit_code_of_wait_status passes the child's code on") {
  CHECK(exit_code_of_wait_status(0) == 0);
  CHECK(exit_code_of_wait_status(3 << 8) == 3);
  CHECK(exit_code_of_wait_status(125 << 8) == 125);
  CHECK(exit_code_of_wait_status(255 << 8) == 255);
}

TEST_CASE("exit_code_of_wait_status maps signal N to 128+N") {
  CHECK(exit_code_of_wait_status(SIGTERM) == 143);
  CHECK(exit_code_of_wait_status(SIGKILL) == 137);
  CHECK(exit_code_of_wait_status(SIGINT | 0x80) == 130); // core dumped
}

TEST_CASE("exit_code_of_siginfo maps waitid results the same way") {
  CHECK(exit_code_of_siginfo(CLD_EXITED, 7) == 7);
  CHECK(exit_code_of_siginfo(CLD_KILLED, SIGTERM) == 143);
  CHECK(exit_code_of_siginfo(CLD_DUMPED, SIGSEGV) == 139);
}
