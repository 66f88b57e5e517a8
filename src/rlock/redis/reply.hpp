#pragma once

#include <string>
#include <vector>

namespace rlock::redis {

// A reply from the server, as rlock keeps it (ReplyReader turns what the
// parser read into this). May be an error reply.
struct Reply {
  // RESP2's types, numbered as hiredis numbers them (messages show the
  // number); `other` is anything else a parser accepts (RESP3's types).
  enum class Type {
    other = 0,
    string = 1,
    array = 2,
    integer = 3,
    nil = 4,
    status = 5,
    error = 6,
  };

  Type type = Type::nil;
  std::string text;            // of a string, status or error
  long long integer = 0;       // of an integer
  std::vector<Reply> elements; // of an array
  // Of an error reply read by a Connection: where a password can be given
  // (ConnectOptions::password_sources), for throw_if_error() to word a
  // refusal for want of one. Not part of what the server sent.
  std::string password_sources;

  bool
  is_error() const {
    return type == Type::error;
  }
  bool
  is_array() const {
    return type == Type::array;
  }
  bool
  is_nil() const {
    return type == Type::nil;
  }
  // True for a bulk string (not a status).
  bool
  is_string() const {
    return type == Type::string;
  }
};

// The accessors a decoder reads a reply with. throw_if_error is defined in
// connection.cpp, beside the Connection that gives an error reply its
// password_sources.
// Throws Error (unavailable) when `reply` is an error reply: "<what>: <error>";
// a refusal for want of a password says where one can be given (the reply's
// password_sources, or a wording that names no option).
void throw_if_error(const Reply& reply, const std::string& what);

// Returns the reply's integer; throws Error (unavailable) for any other type.
long long integer_of(const Reply& reply, const std::string& what);

// Returns the reply's string ("" for nil); throws Error for other types.
std::string string_of(const Reply& reply, const std::string& what);

} // namespace rlock::redis
