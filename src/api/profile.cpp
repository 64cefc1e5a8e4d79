// sk_superkernel_profile and sk_superkernel_write_trace: the last completed launch of a super
// kernel built with profiling=1 (host/executor/profiler.hpp records it, common/trace_json.cpp renders it).
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "api/capabilities.hpp"
#include "api/handles.hpp"
#include "common/trace_json.hpp"

using sk::fail;

namespace {

// The fields of the first sk_profile_record (0.2.0): the smallest struct_size a caller can have.
constexpr size_t kFirstRecordSize = offsetof(sk_profile_record, sync_wait_ns) + sizeof(uint64_t);
// No version will grow the record this far: a larger struct_size is an uninitialised one, and
// taking it as the stride would write far past the caller's array.
constexpr size_t kMaxRecordSize = 4096;

}  // namespace

extern "C" {

SK_API sk_status sk_superkernel_profile(sk_superkernel *sk, sk_profile_record *records, size_t cap, size_t *count) {
  if (sk_status st = sk::api::check(sk, "sk_superkernel_profile")) return st;
  if (!records && cap > 0)
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_profile: records is NULL but cap is %zu", cap);
  // The caller's records[0].struct_size is its sizeof(sk_profile_record): the array's stride,
  // and how much of each record libsk may write.
  const uint32_t stride = records && cap > 0 ? records[0].struct_size : 0;
  if (records && cap > 0 &&
      (stride < kFirstRecordSize || stride > kMaxRecordSize || stride % alignof(sk_profile_record) != 0))
    return fail(SK_ERR_INVALID_ARGUMENT,
                "sk_superkernel_profile: records[0].struct_size is %u, not sizeof(sk_profile_record) "
                "(a multiple of %zu in [%zu, %zu]; this libsk's is %zu)",
                stride, alignof(sk_profile_record), kFirstRecordSize, kMaxRecordSize, sizeof(sk_profile_record));
  return sk::api::guarded("sk_superkernel_profile", [&]() -> sk_status {
    std::vector<sk_profile_record> last;
    uint32_t id = 0;
    if (sk_status st = sk::api::last_profile(*sk->backend, "sk_superkernel_profile", &last, &id); st != SK_OK)
      return st;
    if (count) *count = last.size();
    if (cap < last.size()) {
      // Only records NULL, cap 0, count set is a size query; an array of cap 0 is one too small.
      if (records || !count)
        return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_profile: '%s' has %zu records, cap is %zu",
                    sk->backend->plan.name.c_str(), last.size(), cap);
      return SK_OK;
    }
    // Fields the caller's struct covers and this libsk knows; struct_size stays the caller's.
    const size_t filled = std::min<size_t>(stride, sizeof(sk_profile_record));
    unsigned char *out = reinterpret_cast<unsigned char *>(records);
    for (size_t i = 0; i < last.size(); ++i) {
      last[i].struct_size = stride;
      std::memcpy(out + i * stride, &last[i], filled);
    }
    return SK_OK;
  });
}

SK_API sk_status sk_superkernel_write_trace(sk_superkernel *sk, const char *path) {
  if (sk_status st = sk::api::check(sk, "sk_superkernel_write_trace")) return st;
  if (!path || !*path)
    return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_write_trace: path is %s", path ? "empty" : "NULL");
  return sk::api::guarded("sk_superkernel_write_trace", [&]() -> sk_status {
    std::vector<sk_profile_record> last;
    uint32_t id = 0;
    if (sk_status st = sk::api::last_profile(*sk->backend, "sk_superkernel_write_trace", &last, &id); st != SK_OK)
      return st;
    std::vector<std::string> names;
    names.reserve(sk->backend->plan.steps.size());
    for (const sk::PlanStep &s : sk->backend->plan.steps) names.push_back(s.kernel.name);
    const std::string json = sk::chrome_trace_json(sk->backend->plan.name, id, names, last);
    FILE *f = std::fopen(path, "w");
    if (!f)
      return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_write_trace: cannot open '%s' for writing: %s", path,
                  std::strerror(errno));
    const bool wrote = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    const int write_errno = errno;
    // fclose flushes: a full disk shows up here as often as in fwrite.
    if (std::fclose(f) != 0 || !wrote)
      return fail(SK_ERR_INVALID_ARGUMENT, "sk_superkernel_write_trace: cannot write '%s': %s", path,
                  std::strerror(wrote ? errno : write_errno));
    return SK_OK;
  });
}

}  // extern "C"
