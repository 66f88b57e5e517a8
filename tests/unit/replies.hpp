// Reply values for tests, built without a socket.
#pragma once

#include <rlock/redis/reply.hpp>

#include <string>
#include <utility>
#include <vector>

namespace test_replies {

using rlock::redis::Reply;

inline Reply
integer(long long value) {
  Reply reply;
  reply.type = Reply::Type::integer;
  reply.integer = value;
  return reply;
}

inline Reply
bulk(std::string text) {
  Reply reply;
  reply.type = Reply::Type::string;
  reply.text = std::move(text);
  return reply;
}

inline Reply
status(std::string text) {
  Reply reply = bulk(std::move(text));
  reply.type = Reply::Type::status;
  return reply;
}

inline Reply
error(std::string text) {
  Reply reply = bulk(std::move(text));
  reply.type = Reply::Type::error;
  return reply;
}

inline Reply
nil() {
  return Reply{};
}

inline Reply
array(std::vector<Reply> elements) {
  Reply reply;
  reply.type = Reply::Type::array;
  reply.elements = std::move(elements);
  return reply;
}

} // namespace test_replies
