#pragma once

#include <rlock/util/duration.hpp>
#include <rlock/util/fd.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace rlock::redis {

// A byte stream to one server: a socket, or TLS over one. The socket is
// non-blocking and close-on-exec; every call that waits is bounded by the
// timeout it is given. Failures throw Error (unavailable) naming `address`.
class Stream {
public:
  Stream(UniqueFd socket, std::string address);
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Sends all of `data`, waiting at most `timeout` for the socket each time
  // it is full.
  void write_all(std::string_view data, Duration timeout);

  // Appends what has arrived to `buffer`. When nothing has and `block`, waits
  // up to `timeout` for something. Returns the number of bytes appended,
  // which is zero only when not blocking. Drains what the socket and any TLS
  // record hold, so that poll(2) on fd() tells when more arrives.
  std::size_t read_into(std::string& buffer, bool block, Duration timeout);

  // Returns the socket, to wait on with poll(2).
  int
  fd() const {
    return m_socket.get();
  }

  const std::string&
  address() const {
    return m_address;
  }

protected:
  // What one non-blocking read or write did.
  enum class Io { done, want_read, want_write, end_of_stream };

  // Reads or writes at most `size` bytes without waiting; sets `count`.
  // Throws Error (unavailable) on a failure.
  virtual Io read_some(char* data, std::size_t size, std::size_t& count) = 0;
  virtual Io
  write_some(const char* data, std::size_t size, std::size_t& count) = 0;

  // True when bytes were received but not yet returned (TLS records).
  virtual bool
  has_buffered() const {
    return false;
  }

  // Waits until the socket is ready for `io` (want_read or want_write);
  // false when `timeout` ran out first.
  bool wait_for(Io io, Duration timeout) const;

  [[noreturn]] void fail(const std::string& detail) const;

private:
  UniqueFd m_socket;
  std::string m_address;
};

// A plain TCP or unix-domain socket.
class PlainStream final : public Stream {
public:
  using Stream::Stream;

protected:
  Io read_some(char* data, std::size_t size, std::size_t& count) override;
  Io
  write_some(const char* data, std::size_t size, std::size_t& count) override;
};

// Connects to host:port (any address the name resolves to, in turn) or to a
// unix-domain socket, within `timeout` in all. Throws Error (unavailable):
// "cannot connect to ADDRESS: REASON".
UniqueFd connect_tcp(const std::string& host,
                     int port,
                     const std::string& address,
                     Duration timeout);
UniqueFd connect_unix(const std::string& path, Duration timeout);

// A connect(2) started without waiting, for a caller that waits on several
// at once: poll its socket for POLLOUT, then ask finish_connect().
struct StartedConnect {
  UniqueFd socket;
  int error = 0;       // the errno it failed with at once, or EINPROGRESS
  std::string failure; // why the name did not resolve ("" when it did)
};

// Starts connecting a non-blocking, close-on-exec socket to host:port (the
// first of the name's addresses that does not fail at once) or to the
// unix-domain socket at `path`. Does not wait.
StartedConnect start_connect(const std::string& host, int port);
StartedConnect start_connect(const std::string& path);

// Returns how the connect started on `fd` ended, once it is writable: 0
// when connected (a TCP socket gets TCP_NODELAY), else the errno.
int finish_connect(int fd);

// Throws Error (unavailable): "cannot connect to ADDRESS: REASON", for the
// errno `error` (ETIMEDOUT: "no answer within TIMEOUT").
[[noreturn]] void
fail_connect(const std::string& address, int error, Duration timeout);

} // namespace rlock::redis
