#include "common/json_writer.hpp"

#include "common/text_escape.hpp"

#include <cstdio>

namespace sk {

void JsonWriter::separate() {
  if (need_comma_) out_ += ',';
  need_comma_ = false;
}

JsonWriter &JsonWriter::begin_object() {
  separate();
  out_ += '{';
  return *this;
}
JsonWriter &JsonWriter::end_object() {
  out_ += '}';
  need_comma_ = true;
  return *this;
}
JsonWriter &JsonWriter::begin_array() {
  separate();
  out_ += '[';
  return *this;
}
JsonWriter &JsonWriter::end_array() {
  out_ += ']';
  need_comma_ = true;
  return *this;
}
JsonWriter &JsonWriter::key(std::string_view k) {
  value(k);
  out_ += ':';
  need_comma_ = false;
  return *this;
}
JsonWriter &JsonWriter::value(std::string_view s) {
  separate();
  out_ += '"';
  append_json_string(out_, s);
  out_ += '"';
  need_comma_ = true;
  return *this;
}
JsonWriter &JsonWriter::value(uint64_t n) {
  separate();
  out_ += std::to_string(n);
  need_comma_ = true;
  return *this;
}
JsonWriter &JsonWriter::fixed3(uint64_t thousandths) {
  separate();
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(thousandths / 1000),
                static_cast<unsigned long long>(thousandths % 1000));
  out_ += buf;
  need_comma_ = true;
  return *this;
}
JsonWriter &JsonWriter::value(bool b) {
  separate();
  out_ += b ? "true" : "false";
  need_comma_ = true;
  return *this;
}

}  // namespace sk
