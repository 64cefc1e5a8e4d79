/* Linker test kernel: calls a Rust function (v0 mangling) nothing defines, as an object linked
 * against a Rust crate it was not given would: the message shows the name demangled. */
void sk_test_rust_missing(unsigned) __asm__("_RNvNtCs1234_7mycrate6module12missing_func");
void rust_mangled_missing(unsigned x) { sk_test_rust_missing(x); }
