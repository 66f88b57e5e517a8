#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <openssl/x509v3.h>
#include <string>

namespace rlock::redis {

// The OpenSSL functions rlock's TLS transport calls. libssl is loaded with
// dlopen(3) the first time a rediss:// URL needs it, so that the runs that
// do not use TLS (most of them) do not pay for loading and relocating
// libssl and libcrypto at every start.
#define RLOCK_OPENSSL_FUNCTIONS(X)                                             \
  X(ERR_clear_error)                                                           \
  X(ERR_error_string_n)                                                        \
  X(ERR_peek_error)                                                            \
  X(ERR_peek_last_error)                                                       \
  X(ERR_reason_error_string)                                                   \
  X(OpenSSL_version)                                                           \
  X(SSL_CTX_check_private_key)                                                 \
  X(SSL_CTX_ctrl)                                                              \
  X(SSL_CTX_free)                                                              \
  X(SSL_CTX_load_verify_locations)                                             \
  X(SSL_CTX_new)                                                               \
  X(SSL_CTX_set_default_verify_paths)                                          \
  X(SSL_CTX_set_verify)                                                        \
  X(SSL_CTX_use_PrivateKey_file)                                               \
  X(SSL_CTX_use_certificate_chain_file)                                        \
  X(SSL_connect)                                                               \
  X(SSL_ctrl)                                                                  \
  X(SSL_free)                                                                  \
  X(SSL_get0_param)                                                            \
  X(SSL_get_error)                                                             \
  X(SSL_get_verify_result)                                                     \
  X(SSL_has_pending)                                                           \
  X(SSL_is_init_finished)                                                      \
  X(SSL_new)                                                                   \
  X(SSL_read_ex)                                                               \
  X(SSL_set1_host)                                                             \
  X(SSL_set_fd)                                                                \
  X(SSL_shutdown)                                                              \
  X(SSL_write_ex)                                                              \
  X(TLS_client_method)                                                         \
  X(X509_VERIFY_PARAM_set1_ip_asc)                                             \
  X(X509_verify_cert_error_string)

struct OpenSsl {
#define RLOCK_OPENSSL_POINTER(name) decltype(&::name) name = nullptr;
  RLOCK_OPENSSL_FUNCTIONS(RLOCK_OPENSSL_POINTER)
#undef RLOCK_OPENSSL_POINTER
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  decltype(&::SSL_CTX_set_options) SSL_CTX_set_options = nullptr;
#endif
};

// Returns libssl's functions, loading it on the first call (thread-safe).
// Throws Error (unavailable) when libssl cannot be loaded.
const OpenSsl& openssl();

// Returns the version of the libssl that openssl() loads, or why it cannot.
std::string openssl_version();

} // namespace rlock::redis
