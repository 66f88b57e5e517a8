// main() of the Redis tests: refuses to run against a server that holds
// data, so a wrong RLOCK_TEST_URL can never touch somebody's database.
#define CATCH_CONFIG_RUNNER
#include <rlock/redis/connection.hpp>
#include <rlock/redis/url.hpp>
#include <rlock/util/error.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

int
main(int argc, char** argv) {
  const char* url = std::getenv("RLOCK_TEST_URL");
  if (url == nullptr) {
    std::fprintf(stderr,
                 "RLOCK_TEST_URL is not set: run through "
                 "tests/lib/with-redis.sh\n");
    return 2;
  }
  try {
    const auto endpoint = rlock::redis::parse_url(url);
    if (!endpoint) {
      std::fprintf(stderr, "RLOCK_TEST_URL: %s\n", endpoint.error().c_str());
      return 2;
    }
    auto connection = rlock::redis::Connection::open(endpoint.value(), {});
    if (connection.command({"DBSIZE"}).integer != 0) {
      std::fprintf(stderr,
                   "refusing to run: the database at %s is not empty\n",
                   connection.address().c_str());
      return 2;
    }
  } catch (const rlock::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return Catch::Session().run(argc, argv);
}
