#include "common/reach_path.hpp"

#include <cinttypes>
#include <cstdio>

namespace sk {

bool conservative(const std::vector<ReachStep> &steps) {
  for (const ReachStep &s : steps)
    if (s.how == ReachHow::IndirectCall || s.how == ReachHow::IndirectJump || s.how == ReachHow::Undecoded)
      return true;
  return false;
}

namespace {

std::string node(const std::string &name, bool section, bool bare) {
  if (section) return "an unnamed part of " + name;
  return bare ? name : "'" + name + "'";
}

std::string where(const ReachStep &s) {
  if (s.at < 0) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "+0x%" PRIx64, static_cast<uint64_t>(s.at));
  return s.from + buf;
}

std::string verb(const ReachStep &s, const std::string &to) {
  switch (s.how) {
    case ReachHow::Call: return "calls " + to;
    case ReachHow::Jump: return "jumps to " + to;
    case ReachHow::Reference: return "refers to " + to;
    case ReachHow::IndirectCall:
      return "may call " + to + " through a pointer (indirect call" + (s.at < 0 ? "" : " at " + where(s)) + ")";
    case ReachHow::IndirectJump:
      return "may jump to " + to + " through a pointer (indirect jump" + (s.at < 0 ? "" : " at " + where(s)) + ")";
    case ReachHow::Member: return "holds " + to;
    case ReachHow::Undecoded: return "may reach " + to + " (its code was not decoded)";
  }
  return "reaches " + to;
}

}  // namespace

std::string describe(const std::vector<ReachStep> &steps) {
  std::string out;
  for (size_t i = 0; i < steps.size(); ++i) {
    const ReachStep &s = steps[i];
    const std::string to = node(s.to, s.to_section, i + 1 == steps.size());
    out += i == 0 ? node(s.from, s.from_section, false) + " " + verb(s, to) : ", which " + verb(s, to);
  }
  return out;
}

}  // namespace sk
