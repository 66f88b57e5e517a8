#include <rlock/redis/failure.hpp>
#include <rlock/redis/openssl.hpp>
#include <rlock/redis/tls.hpp>
#include <rlock/util/error.hpp>
#include <rlock/util/log.hpp>
#include <rlock/util/text.hpp>

#include <arpa/inet.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

namespace rlock::redis {

namespace {

const OpenSsl&
api() {
  return openssl();
}

struct ContextDeleter {
  void
  operator()(SSL_CTX* context) const {
    api().SSL_CTX_free(context);
  }
};
struct SessionDeleter {
  void
  operator()(SSL* ssl) const {
    api().SSL_free(ssl);
  }
};
using ContextPtr = std::unique_ptr<SSL_CTX, ContextDeleter>;
using SessionPtr = std::unique_ptr<SSL, SessionDeleter>;

// Returns the reason of the latest OpenSSL error of this thread and clears
// the queue: "certificate verify failed", "wrong version number".
std::string
take_openssl_error() {
  const unsigned long code = api().ERR_peek_last_error();
  api().ERR_clear_error();
  if (code == 0) {
    return "unknown error";
  }
  const char* reason = api().ERR_reason_error_string(code);
  if (reason != nullptr) {
    return reason;
  }
  std::array<char, 256> text{};
  api().ERR_error_string_n(code, text.data(), text.size());
  return text.data();
}

[[noreturn]] void
bad_file(const std::string& option, const std::string& file) {
  throw Error(ErrorKind::bad_input,
              option + " " + quote(file) + ": " + take_openssl_error());
}

ContextPtr
make_context(const TlsOptions& options) {
  ContextPtr context(api().SSL_CTX_new(api().TLS_client_method()));
  if (!context) {
    throw Error(ErrorKind::system,
                "cannot set up TLS: " + take_openssl_error());
  }
  api().SSL_CTX_ctrl(
      context.get(), SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, nullptr);
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  // A server that closes without close_notify has still closed.
  api().SSL_CTX_set_options(context.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
  api().SSL_CTX_ctrl(context.get(),
                     SSL_CTRL_MODE,
                     SSL_MODE_ENABLE_PARTIAL_WRITE
                         | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER,
                     nullptr);
  api().SSL_CTX_set_verify(context.get(),
                           options.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                           nullptr);
  if (!options.ca_file.empty()) {
    if (api().SSL_CTX_load_verify_locations(
            context.get(), options.ca_file.c_str(), nullptr)
        != 1) {
      bad_file(options.names.ca, options.ca_file);
    }
  } else if (api().SSL_CTX_set_default_verify_paths(context.get()) != 1) {
    api().ERR_clear_error(); // no system CAs: verification fails later, saying
                             // so
  }
  if (!options.cert_file.empty()) {
    if (api().SSL_CTX_use_certificate_chain_file(context.get(),
                                                 options.cert_file.c_str())
        != 1) {
      bad_file(options.names.cert, options.cert_file);
    }
    if (api().SSL_CTX_use_PrivateKey_file(
            context.get(), options.key_file.c_str(), SSL_FILETYPE_PEM)
        != 1) {
      bad_file(options.names.key, options.key_file);
    }
    if (api().SSL_CTX_check_private_key(context.get()) != 1) {
      bad_file(options.names.key, options.key_file);
    }
  }
  return context;
}

bool
is_ip_address(const std::string& name) {
  std::array<unsigned char, sizeof(in6_addr)> buffer{};
  return inet_pton(AF_INET, name.c_str(), buffer.data()) == 1
         || inet_pton(AF_INET6, name.c_str(), buffer.data()) == 1;
}

// Sets the name sent (SNI) and the one the certificate must carry.
void
set_server_name(SSL* ssl, const std::string& name, bool verify) {
  if (is_ip_address(name)) {
    if (verify) {
      api().X509_VERIFY_PARAM_set1_ip_asc(api().SSL_get0_param(ssl),
                                          name.c_str());
    }
    return; // SNI carries host names only
  }
  api().SSL_ctrl(ssl,
                 SSL_CTRL_SET_TLSEXT_HOSTNAME,
                 TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(name.c_str()));
  if (verify) {
    api().SSL_set1_host(ssl, name.c_str());
  }
}

class TlsStream final : public Stream {
public:
  TlsStream(UniqueFd socket,
            std::string address,
            ContextPtr context,
            SessionPtr ssl,
            bool client_certificate,
            TlsOptions::FileNames names)
      : Stream(std::move(socket), std::move(address)),
        m_context(std::move(context)), m_ssl(std::move(ssl)),
        m_client_certificate(client_certificate), m_names(std::move(names)) {
  }

  ~TlsStream() override {
    api().SSL_shutdown(m_ssl.get()); // a close_notify, without waiting for one
    api().ERR_clear_error();
  }

  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Runs the handshake; throws naming what failed.
  void
  handshake(Duration timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      api().ERR_clear_error();
      const int result = api().SSL_connect(m_ssl.get());
      if (result == 1) {
        return;
      }
      const Io io = io_of(result);
      if (io == Io::end_of_stream) {
        handshake_failed("the server closed the connection");
      }
      if (io != Io::done
          && !wait_for(io, deadline - std::chrono::steady_clock::now())) {
        // A busy or restarting server may answer the next time.
        throw Failure(FailureKind::timed_out,
                      "TLS handshake with " + address()
                          + " failed: no answer within "
                          + format_seconds(timeout));
      }
    }
  }

protected:
  Io
  read_some(char* data, std::size_t size, std::size_t& count) override {
    api().ERR_clear_error();
    const int result = api().SSL_read_ex(m_ssl.get(), data, size, &count);
    if (result == 1) {
      m_received = true;
      return Io::done;
    }
    return io_of(result);
  }

  Io
  write_some(const char* data, std::size_t size, std::size_t& count) override {
    api().ERR_clear_error();
    const int result = api().SSL_write_ex(m_ssl.get(), data, size, &count);
    return result == 1 ? Io::done : io_of(result);
  }

  bool
  has_buffered() const override {
    return api().SSL_has_pending(m_ssl.get()) == 1;
  }

private:
  // Maps a failed OpenSSL call to what to wait for; throws on a failure.
  Io
  io_of(int result) {
    const int saved_errno = errno;
    switch (api().SSL_get_error(m_ssl.get(), result)) {
    case SSL_ERROR_WANT_READ:
      return Io::want_read;
    case SSL_ERROR_WANT_WRITE:
      return Io::want_write;
    case SSL_ERROR_ZERO_RETURN:
      return Io::end_of_stream;
    case SSL_ERROR_SYSCALL:
      if (saved_errno == 0 && api().ERR_peek_error() == 0) {
        return Io::end_of_stream;
      }
      fail(
          (saved_errno != 0 ? std::strerror(saved_errno) : take_openssl_error())
          + cut_off_hint());
    default:
      fail_tls();
    }
  }

  [[noreturn]] void
  fail_tls() const {
    const long verified = api().SSL_get_verify_result(m_ssl.get());
    std::string reason = take_openssl_error();
    if (verified != X509_V_OK) {
      reason += std::string(" (")
                + api().X509_verify_cert_error_string(verified) + ")";
    }
    if (api().SSL_is_init_finished(m_ssl.get()) == 0) {
      handshake_failed(reason);
    }
    fail("TLS: " + reason);
  }

  [[noreturn]] void
  handshake_failed(const std::string& reason) const {
    throw Failure(FailureKind::tls_failed,
                  "TLS handshake with " + address() + " failed: " + reason);
  }

  // With TLS 1.3 a server that wants a client certificate says so after
  // the handshake, and its alert may be lost in the reset that follows.
  std::string
  cut_off_hint() const {
    if (m_received || m_client_certificate) {
      return {};
    }
    return " (right after the TLS handshake: does the server require a "
           "client certificate? "
           + m_names.cert + ", " + m_names.key + ")";
  }

  ContextPtr m_context;
  SessionPtr m_ssl;
  bool m_client_certificate;
  TlsOptions::FileNames m_names; // how to name the certificate and key
  bool m_received = false;
};

} // namespace

std::unique_ptr<Stream>
start_tls(UniqueFd socket,
          const std::string& host,
          const std::string& address,
          const TlsOptions& options,
          Duration timeout) {
  auto context = make_context(options);
  SessionPtr ssl(api().SSL_new(context.get()));
  if (!ssl || api().SSL_set_fd(ssl.get(), socket.get()) != 1) {
    throw Error(ErrorKind::system,
                "cannot set up TLS: " + take_openssl_error());
  }
  set_server_name(ssl.get(),
                  options.server_name.empty() ? host : options.server_name,
                  !options.insecure);
  auto stream = std::make_unique<TlsStream>(std::move(socket),
                                            address,
                                            std::move(context),
                                            std::move(ssl),
                                            !options.cert_file.empty(),
                                            options.names);
  stream->handshake(timeout);
  return stream;
}

std::string
tls_library_version() {
  return openssl_version();
}

} // namespace rlock::redis
