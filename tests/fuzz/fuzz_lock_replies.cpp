// The lock protocol's reply decoding (lock/protocol.cpp, lock/status.cpp,
// the status views and redis/subscription.cpp) against a fake server that
// answers every command with the fuzzer's bytes. The decoders take a
// Connection, so a unix socket in this process plays the server: a thread
// accepts, sends the bytes, ends its side and discards what rlock sends. The
// first byte picks the decoder. Error is the expected way to fail; anything
// else is a finding.
#include <rlock/cli/status_view.hpp>
#include <rlock/lock/keys.hpp>
#include <rlock/lock/protocol.hpp>
#include <rlock/lock/status.hpp>
#include <rlock/redis/connection.hpp>
#include <rlock/redis/subscription.hpp>
#include <rlock/util/error.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz.hpp"
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

using namespace rlock;
using namespace std::chrono_literals;

namespace {

// A listening unix socket in a private temporary directory.
class FakeServer {
public:
  FakeServer() {
    char dir[] = "/tmp/rlock-fuzz-XXXXXX";
    if (mkdtemp(dir) == nullptr) {
      fuzz::finding("mkdtemp failed");
    }
    m_dir = dir;
    m_endpoint.socket_path = m_dir + "/redis.sock";
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    m_endpoint.socket_path.copy(address.sun_path, sizeof address.sun_path - 1);
    m_listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (m_listener < 0
        || bind(m_listener,
                reinterpret_cast<const sockaddr*>(&address),
                sizeof address)
               != 0
        || listen(m_listener, 4) != 0) {
      fuzz::finding("cannot listen on", m_endpoint.socket_path);
    }
  }

  ~FakeServer() {
    close(m_listener);
    unlink(m_endpoint.socket_path.c_str());
    rmdir(m_dir.c_str());
  }

  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;

  const redis::Endpoint&
  endpoint() const {
    return m_endpoint;
  }

  // Serves one connection: sends `bytes`, then reads until the client closes.
  void
  serve(std::string_view bytes) const {
    const int peer = accept(m_listener, nullptr, nullptr);
    if (peer < 0) {
      fuzz::finding("accept failed");
    }
    while (!bytes.empty()) {
      const auto sent = send(peer, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent <= 0) {
        break;
      }
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    shutdown(peer, SHUT_WR);
    char discard[4096];
    while (read(peer, discard, sizeof discard) > 0) {
    }
    close(peer);
  }

private:
  std::string m_dir;
  redis::Endpoint m_endpoint;
  int m_listener = -1;
};

void
show(const lock::StatusSnapshot& snapshot) {
  (void)cli::format_status_table(snapshot, 80);
  (void)cli::format_status_json(snapshot);
}

using Decoder = std::function<void(redis::Connection&)>;

// Each calls one function that sends commands and decodes their replies.
std::vector<Decoder>
decoders() {
  const auto keys = lock::keys_for("rlock:", "fuzz");
  const lock::Holder holder{"host", 42, "user", "cmd"};
  return {
      [=](auto& c) { (void)lock::try_acquire(c, keys, "t", 30s, holder); },
      [=](auto& c) { (void)lock::try_acquire(c, keys, "t", 30s, holder, 10s); },
      [=](auto& c) { (void)lock::renew(c, keys, "t", 30s); },
      [=](auto& c) { (void)lock::release(c, keys, "t"); },
      [=](auto& c) { lock::leave_queue(c, keys, "t"); },
      [=](auto& c) { (void)lock::lease_remaining_ms(c, keys); },
      [=](auto& c) { (void)lock::check(c, keys, "t"); },
      [=](auto& c) { (void)lock::force_release(c, keys); },
      [=](auto& c) { (void)lock::peek(c, keys); },
      [=](auto& c) { (void)lock::current_slot(c, keys, 1h); },
      [=](auto& c) { lock::mark_slot_done(c, keys, 7, 1h); },
      [](auto& c) {
        show(lock::read_locks(c, "rlock:", {"a", "b"}));
      },
      [](auto& c) { show(lock::list_locks(c, "rlock:", "*")); },
  };
}

// Subscribes, which reads the confirmations, then takes what else arrived.
void
subscribe(const redis::Endpoint& endpoint,
          const redis::ConnectOptions& options) {
  auto subscription = redis::Subscription::open(endpoint, options, {"a", "b"});
  for (int i = 0; i < 3; ++i) {
    (void)subscription.take_messages();
  }
}

// Expects `step` to fail with nothing but an Error with a one-line message.
template <typename Step>
void
expect_error_only(Step&& step) {
  try {
    step();
  } catch (const Error& e) {
    if (!fuzz::is_one_line(e.what())) {
      fuzz::finding("an error message is not one line", e.what());
    }
  }
}

} // namespace

// hiredis 0.14 allocates a multi-bulk reply's array as soon as it reads the
// count, with no limit: "*1700000000\r\n" asks for 13.6 GB. ReplyLimits
// refuses such a reply before hiredis reads it, so any allocation above
// 256 MB is a finding (ASan reports it) rather than an "Out of memory".
extern "C" const char*
__asan_default_options() {
  return "max_allocation_size_mb=256";
}

extern "C" int
LLVMFuzzerInitialize(int*, char***) {
  // The fake server may end its side while rlock still writes.
  std::signal(SIGPIPE, SIG_IGN);
  return 0;
}

extern "C" int
LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const FakeServer server;
  static const auto all = decoders();
  if (size == 0) {
    return 0;
  }
  // One choice more than decoders: a subscription, which opens its own.
  const std::size_t choice = data[0] % (all.size() + 1);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1,
                               size - 1);
  redis::ConnectOptions options;
  options.connect_timeout = 1s;
  options.io_timeout = 1s;
  std::thread serving([&] { server.serve(bytes); });
  if (choice == all.size()) {
    expect_error_only([&] { subscribe(server.endpoint(), options); });
  } else {
    // Nothing is sent before the first command, so opening cannot fail.
    std::optional<redis::Connection> connection;
    try {
      connection.emplace(redis::Connection::open(server.endpoint(), options));
    } catch (const Error& e) {
      fuzz::finding("cannot connect to the fake server", e.what());
    }
    expect_error_only([&] { all[choice](*connection); });
  }
  serving.join();
  return 0;
}
