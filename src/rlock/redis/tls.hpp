#pragma once

#include <rlock/redis/stream.hpp>
#include <rlock/util/duration.hpp>
#include <rlock/util/fd.hpp>

#include <memory>
#include <string>

namespace rlock::redis {

// How to talk TLS to a rediss:// server. Verification is on unless
// `insecure`: the chain against `ca_file` (else the system's CAs) and the
// name against `server_name` (else the URL's host, a name or an address).
struct TlsOptions {
  std::string ca_file;     // --tls-ca
  std::string cert_file;   // --tls-cert: a client certificate (PEM chain)
  std::string key_file;    // --tls-key: its private key (PEM)
  std::string server_name; // --tls-server-name
  bool insecure = false;   // --tls-insecure
  // How messages name each file: the command line's option names, given by
  // cli/.
  struct FileNames {
    std::string ca = "the CA file";
    std::string cert = "the client certificate";
    std::string key = "the client key";
  } names;
};

// Performs the TLS handshake on a connected socket within `timeout` and
// returns the encrypted stream. Throws Error (unavailable) "TLS handshake with
// ADDRESS failed: REASON", or Error (bad_input) naming (by `names`) a
// certificate or key file that cannot be used.
std::unique_ptr<Stream> start_tls(UniqueFd socket,
                                  const std::string& host,
                                  const std::string& address,
                                  const TlsOptions& options,
                                  Duration timeout);

// The OpenSSL version rlock runs with, for --version.
std::string tls_library_version();

} // namespace rlock::redis
