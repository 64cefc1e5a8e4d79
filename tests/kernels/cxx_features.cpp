// Linker test kernel: C++ with the compilers' default flags. Exceptions thrown and caught
// inside a kernel and one that escapes it, RTTI (typeid; dynamic_cast within the object and to
// libstdc++'s classes), a guarded function-local static, COMDAT groups (a template, an inline
// function, the vtables and type_info of classes whose virtual functions are all inline).
#include <sk_kernel.h>
#include <stdint.h>

#include <stdexcept>
#include <typeinfo>

namespace cxxk {

struct Shape {
  virtual ~Shape() {}
  virtual int32_t area() const { return 0; }
};
struct Square : Shape {
  int32_t side;
  explicit Square(int32_t s) : side(s) {}
  int32_t area() const override { return side * side; }
};
struct Rect : Shape {
  int32_t w, h;
  Rect(int32_t a, int32_t b) : w(a), h(b) {}
  int32_t area() const override { return w * h; }
};
struct Oops : std::runtime_error {
  int32_t code;
  Oops(const char *what, int32_t c) : std::runtime_error(what), code(c) {}
};

template <typename T>
T twice(T v) {
  return v + v;
}
inline int32_t calls = 0;  // an inline variable: a COMDAT group of its own

__attribute__((noinline)) int32_t checked(int32_t v) {
  ++calls;
  if (v < 0) throw Oops("negative input", v);
  if (v == 0) throw 7;
  return twice(v);
}

__attribute__((noinline)) const Shape &pick(int32_t v, const Square &s, const Rect &r) {
  return v % 2 ? static_cast<const Shape &>(s) : r;
}

struct Table {
  int32_t base;
  Table() : base(static_cast<int32_t>(twice<int64_t>(calls + 50))) {}
};

}  // namespace cxxk

// out[0]: checked(v), or what the handler saw; out[1]: the picked shape's area through a
// dynamic_cast; out[2]: typeid checks; out[3]: the local static's value.
SK_KERNEL(cxx_try_catch, "ptr,i32")
SK_EXTERN_C void cxx_try_catch(int32_t *out, int32_t v) {
  using namespace cxxk;
  try {
    out[0] = checked(v);
  } catch (const std::exception &e) {
    const Oops *o = dynamic_cast<const Oops *>(&e);
    const std::runtime_error *r = dynamic_cast<const std::runtime_error *>(&e);
    const std::logic_error *l = dynamic_cast<const std::logic_error *>(&e);
    out[0] = (o ? 1000 * o->code : 0) + (r ? 100 : 0) + (l ? 10 : 0) + (typeid(e) == typeid(Oops));
  } catch (int i) {
    out[0] = -i;
  }
  Square s(v);
  Rect r(v, 3);
  const Shape &p = pick(v, s, r);
  const Square *sq = dynamic_cast<const Square *>(&p);
  out[1] = sq ? sq->area() : -dynamic_cast<const Rect &>(p).area();
  out[2] = (typeid(p) == typeid(Square)) + 2 * (typeid(p) == typeid(Rect)) + 4 * (typeid(int) == typeid(v));
  static Table table;  // __cxa_guard_acquire / __cxa_guard_release
  out[3] = table.base;
}

// Fails the launch when v is not 0: the exception leaves the kernel.
SK_KERNEL(cxx_escape, "ptr,i32")
SK_EXTERN_C void cxx_escape(int32_t *out, int32_t v) {
  out[sk_block_idx()] = cxxk::checked(v > 0 ? -v : 1);
}

// The same through the other call paths (host/executor/kernel_call.hpp): a float parameter takes the
// register map, 17 doubles take libffi. Each throws when v > 0.
SK_KERNEL(cxx_escape_mapped, "ptr,f32")
SK_EXTERN_C void cxx_escape_mapped(int32_t *out, float v) {
  out[sk_block_idx()] = cxxk::checked(v > 0 ? -1 : 1);
}

SK_KERNEL(cxx_escape_ffi, "ptr,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64,f64")
SK_EXTERN_C void cxx_escape_ffi(int32_t *out, double v, double, double, double, double, double,
                                double, double, double, double, double, double, double, double,
                                double, double, double last) {
  out[sk_block_idx()] = cxxk::checked(v > 0 ? -1 : static_cast<int32_t>(last));
}
