// A minimal JSON writer (objects, arrays, strings with escaping, numbers, booleans) for explain.
// Strings may hold any bytes: they are escaped as common/text_escape.hpp says.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sk {

class JsonWriter {
 public:
  JsonWriter &begin_object();
  JsonWriter &end_object();
  JsonWriter &begin_array();
  JsonWriter &end_array();
  JsonWriter &key(std::string_view k);
  JsonWriter &value(std::string_view s);
  JsonWriter &value(const char *s) { return value(std::string_view(s)); }
  JsonWriter &value(uint64_t n);
  JsonWriter &value(bool b);
  // thousandths / 1000 with three decimals, exactly ("12.345"): nanoseconds as microseconds.
  JsonWriter &fixed3(uint64_t thousandths);
  const std::string &str() const { return out_; }

 private:
  void separate();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace sk
