#pragma once

namespace rlock::proc {

// Returns a shell's status for a waitpid(2) status: the child's own code,
// or 128+N when it died of signal N.
int shell_status_of_wait_status(int wait_status);

// Returns the shell status for waitid(2)'s si_code and si_status, as above.
int shell_status_of_siginfo(int code, int status);

} // namespace rlock::proc
