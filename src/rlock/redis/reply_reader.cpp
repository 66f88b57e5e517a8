#include <rlock/redis/reply_reader.hpp>

#include <hiredis/hiredis.h>

#include <memory>
#include <new>

namespace rlock::redis {

namespace {

struct HiredisReplyDeleter {
  void
  operator()(redisReply* reply) const {
    freeReplyObject(reply);
  }
};

Reply::Type
type_of(int hiredis_type) {
  switch (hiredis_type) {
  case REDIS_REPLY_STRING:
    return Reply::Type::string;
  case REDIS_REPLY_ARRAY:
    return Reply::Type::array;
  case REDIS_REPLY_INTEGER:
    return Reply::Type::integer;
  case REDIS_REPLY_NIL:
    return Reply::Type::nil;
  case REDIS_REPLY_STATUS:
    return Reply::Type::status;
  case REDIS_REPLY_ERROR:
    return Reply::Type::error;
  default:
    return Reply::Type::other;
  }
}

// Copies hiredis's reply. ReplyLimits bounds its size and its nesting,
// hence the recursion.
Reply
copy_of(const redisReply& parsed) {
  Reply reply;
  reply.type = type_of(parsed.type);
  switch (reply.type) {
  case Reply::Type::string:
  case Reply::Type::status:
  case Reply::Type::error:
    reply.text.assign(parsed.str, parsed.len);
    break;
  case Reply::Type::integer:
    reply.integer = parsed.integer;
    break;
  case Reply::Type::array:
    reply.elements.reserve(parsed.elements);
    for (std::size_t i = 0; i < parsed.elements; ++i) {
      reply.elements.push_back(copy_of(*parsed.element[i]));
    }
    break;
  case Reply::Type::nil:
  case Reply::Type::other:
    break;
  }
  return reply;
}

} // namespace

void
ReplyReader::ReaderDeleter::operator()(redisReader* reader) const {
  redisReaderFree(reader);
}

ReplyReader::ReplyReader() : m_reader(redisReaderCreate()) {
  if (!m_reader) {
    throw std::bad_alloc();
  }
}

ReplyReader::~ReplyReader() = default;
ReplyReader::ReplyReader(ReplyReader&&) noexcept = default;
ReplyReader& ReplyReader::operator=(ReplyReader&&) noexcept = default;

void
ReplyReader::feed(std::string_view bytes) {
  m_limits.check(bytes);
  // Both hiredis 0.14 and 1.x set errstr on every failure, out of memory
  // included.
  if (!bytes.empty()
      && redisReaderFeed(m_reader.get(), bytes.data(), bytes.size())
             != REDIS_OK) {
    throw ProtocolError(m_reader->errstr);
  }
}

std::optional<Reply>
ReplyReader::next() {
  void* raw = nullptr;
  if (redisReaderGetReply(m_reader.get(), &raw) != REDIS_OK) {
    throw ProtocolError(m_reader->errstr);
  }
  if (raw == nullptr) {
    return std::nullopt;
  }
  const std::unique_ptr<redisReply, HiredisReplyDeleter> parsed(
      static_cast<redisReply*>(raw));
  return copy_of(*parsed);
}

std::string
format_command(const std::vector<std::string>& args) {
  std::string command = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& arg : args) {
    command += "$" + std::to_string(arg.size()) + "\r\n";
    command += arg;
    command += "\r\n";
  }
  return command;
}

std::string
hiredis_version() {
  return std::to_string(HIREDIS_MAJOR) + "." + std::to_string(HIREDIS_MINOR)
         + "." + std::to_string(HIREDIS_PATCH);
}

} // namespace rlock::redis
