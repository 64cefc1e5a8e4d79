// Versioned structs passed in (sk_kernel_options...) start with struct_size: later versions
// append fields and read only what the caller's struct_size covers, so a caller built against
// an older sk.h (a smaller struct) never has its stack read past the end.
#pragma once
#include <cstddef>

// True when `ptr` is not NULL and its struct_size covers member `field` of struct `type`.
#define SK_STRUCT_COVERS(ptr, type, field) \
  ((ptr) != nullptr && (ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)nullptr)->field))
