// parse_command_line on an argv split from the input at NUL bytes. A word
// that starts with a byte \x01..\x0a sets $RLOCK_URL, $REDIS_URL,
// $RLOCK_PREFIX, $RLOCK_TOKEN, $RLOCK_PASSWORD, $REDISCLI_AUTH, $RLOCK_NAME,
// $RLOCK_RESTART_GRACE, $RLOCK_SENTINEL_PASSWORD or $RLOCK_REPLICAS
// to the rest of it instead.
// Bad input may only throw Error, with a one-line message; anything else is a
// finding.
#include <rlock/cli/parser.hpp>
#include <rlock/util/error.hpp>

#include "fuzz.hpp"
#include <cstdint>

using namespace rlock;

namespace {

// Sets the environment variable that `word`'s first byte names; false when
// it is an argument.
bool
set_environment(std::string_view word, cli::Environment& environment) {
  if (word.empty() || word[0] < 1 || word[0] > 10) {
    return false;
  }
  std::optional<std::string>* fields[] = {&environment.rlock_url,
                                          &environment.redis_url,
                                          &environment.rlock_prefix,
                                          &environment.rlock_token,
                                          &environment.rlock_password,
                                          &environment.rediscli_auth,
                                          &environment.rlock_name,
                                          &environment.restart_grace,
                                          &environment.sentinel_password,
                                          &environment.replicas};
  *fields[word[0] - 1] = std::string(word.substr(1));
  return true;
}

} // namespace

extern "C" int
LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  cli::Environment environment;
  while (!input.empty()) {
    const auto end = input.find('\0');
    const auto word = input.substr(0, end);
    if (!set_environment(word, environment)) {
      args.emplace_back(word);
    }
    input.remove_prefix(end == std::string_view::npos ? input.size() : end + 1);
  }
  try {
    (void)cli::parse_command_line(args, environment);
  } catch (const Error& e) {
    if (!fuzz::is_one_line(e.what())) {
      fuzz::finding("a usage error is not one line", e.what());
    }
  }
  return 0;
}
