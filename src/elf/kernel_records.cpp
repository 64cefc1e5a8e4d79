#include "elf/kernel_records.hpp"

#include <algorithm>

namespace sk::elf {

std::vector<std::string> kernel_records(const Object &o) {
  std::vector<std::string> records;
  const int index = o.find_section(kKernelRecordsSection);
  if (index <= 0 || !o.sections[index].data) return records;
  const Section &s = o.sections[index];
  const char *p = reinterpret_cast<const char *>(s.data), *end = p + s.size;
  while (p < end) {
    const char *q = std::find(p, end, '\0');  // an unterminated last record ends with the section
    if (q > p) records.emplace_back(p, q);
    p = q + 1;
  }
  return records;
}

}  // namespace sk::elf
