#include <rlock/redis/reply_reader.hpp>

#include <hiredis/hiredis.h>

#include <new>

namespace rlock::redis {

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
  return Reply(static_cast<redisReply*>(raw));
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

} // namespace rlock::redis
