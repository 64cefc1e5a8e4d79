// Linker test kernel: C++ COMDAT groups (a template instantiation, an inline variable).
template <typename T>
__attribute__((noinline)) T reloc_twice(T v) {
  return v + v;
}
inline int reloc_inline_counter = 3;
extern "C" long reloc_comdat_sum(int x) {
  reloc_inline_counter += 1;
  return reloc_twice(x) + reloc_twice<long>(x) + reloc_inline_counter;
}
