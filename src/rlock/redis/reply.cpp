#include <rlock/redis/failure.hpp>
#include <rlock/redis/reply.hpp>

namespace rlock::redis {

namespace {

// The type's number, as hiredis numbers it.
std::string
type_of(const Reply& reply) {
  return std::to_string(static_cast<int>(reply.type));
}

} // namespace

long long
integer_of(const Reply& reply, const std::string& what) {
  if (reply.type != Reply::Type::integer) {
    throw Failure(FailureKind::unexpected_reply,
                  what + ": unexpected reply type " + type_of(reply));
  }
  return reply.integer;
}

std::string
string_of(const Reply& reply, const std::string& what) {
  if (reply.is_nil()) {
    return {};
  }
  if (reply.type != Reply::Type::string && reply.type != Reply::Type::status) {
    throw Failure(FailureKind::unexpected_reply,
                  what + ": unexpected reply type " + type_of(reply));
  }
  return reply.text;
}

} // namespace rlock::redis
