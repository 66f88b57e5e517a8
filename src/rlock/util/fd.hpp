#pragma once

#include <unistd.h>

#include <utility>

namespace rlock {

// Owns a file descriptor and closes it on destruction.
class UniqueFd {
public:
  UniqueFd() = default;

  explicit UniqueFd(int fd) : m_fd(fd) {
  }

  UniqueFd(UniqueFd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {
  }

  UniqueFd&
  operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset(std::exchange(other.m_fd, -1));
    }
    return *this;
  }

  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  ~UniqueFd() {
    reset();
  }

  int
  get() const {
    return m_fd;
  }

  // Closes the current descriptor and takes `fd` instead.
  void
  reset(int fd = -1) {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    m_fd = fd;
  }

private:
  int m_fd = -1;
};

} // namespace rlock
