#include <rlock/redis/failure.hpp>
#include <rlock/redis/openssl.hpp>
#include <rlock/util/error.hpp>

#include <dlfcn.h>

#include <string>

namespace rlock::redis {

namespace {

// The library's name, then its path where the build found it (for a libssl
// outside the loader's search path).
constexpr const char* k_candidates[] = {RLOCK_LIBSSL_SONAME, RLOCK_LIBSSL_PATH};

struct Loaded {
  OpenSsl api;
  std::string error; // why it could not be loaded; empty when it was
};

template <typename Function>
bool
bind(void* library, const char* name, Function& function, std::string& error) {
  void* symbol = ::dlsym(library, name);
  if (symbol == nullptr) {
    error = std::string("no ") + name + " in " + RLOCK_LIBSSL_SONAME;
    return false;
  }
  function = reinterpret_cast<Function>(symbol);
  return true;
}

Loaded
load() {
  Loaded loaded;
  void* library = nullptr;
  for (const char* candidate : k_candidates) {
    library = ::dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      break;
    }
    loaded.error = ::dlerror();
  }
  if (library == nullptr) {
    return loaded;
  }
  loaded.error.clear();
  auto& api = loaded.api;
  bool complete = true;
#define RLOCK_OPENSSL_BIND(name)                                               \
  complete = complete && bind(library, #name, api.name, loaded.error);
  RLOCK_OPENSSL_FUNCTIONS(RLOCK_OPENSSL_BIND)
#undef RLOCK_OPENSSL_BIND
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  complete = complete
             && bind(library,
                     "SSL_CTX_set_options",
                     api.SSL_CTX_set_options,
                     loaded.error);
#endif
  (void)complete; // the library stays loaded until exit either way
  return loaded;
}

const Loaded&
loaded() {
  static const Loaded once = load();
  return once;
}

} // namespace

const OpenSsl&
openssl() {
  const auto& result = loaded();
  if (!result.error.empty()) {
    throw Failure(FailureKind::tls_failed,
                  "TLS needs OpenSSL's libssl, which cannot be loaded: "
                      + result.error);
  }
  return result.api;
}

std::string
openssl_version() {
  const auto& result = loaded();
  if (!result.error.empty()) {
    return "unavailable (" + result.error + ")";
  }
  return result.api.OpenSSL_version(OPENSSL_VERSION);
}

} // namespace rlock::redis
