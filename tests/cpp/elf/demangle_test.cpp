// Symbol names in messages: C++ and Rust (legacy and v0) demangled, for symbols rustc 1.95
// wrote. The expected forms are binutils' `c++filt -s rust` output without the crate hashes
// and legacy hashes (rustc-demangle's alternate form), constants without their type.
#include <gtest/gtest.h>

#include "elf/demangle.hpp"

namespace {

using sk::elf::demangle;

TEST(Demangle, RustV0) {
  EXPECT_EQ(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
  EXPECT_EQ(demangle("_RNvNtNtNtCsjrHSEGnQ3l9_3std3sys6random5linux19hashmap_random_keys"),
            "std::sys::random::linux::hashmap_random_keys");
  // A closure in a constant's initialiser in an inherent impl, and an identifier after "0".
  EXPECT_EQ(demangle("_RNvNCNKNvNvMNtNtCsjrHSEGnQ3l9_3std4hash6randomNtBa_11RandomState3new4KEYS0s_023___RUST_STD_"
                     "INTERNAL_VAL"),
            "<std::hash::random::RandomState>::new::KEYS::{K#0}::{closure#1}::__RUST_STD_INTERNAL_VAL");
  // Generic arguments: references, tuples, integer types, paths through back references.
  EXPECT_EQ(demangle("_RINvNtCsgEmfK2I1SDS_4core3ptr13drop_in_placeINtNtNtNtCsjrHSEGnQ3l9_3std11collections4hash3"
                     "map7HashMapReINtNtCslNYArtu3iFV_5alloc3vec3VecThxEEEECsh0ufodFROgm_2v0"),
            "core::ptr::drop_in_place::<std::collections::hash::map::HashMap<&str, alloc::vec::Vec<(u8, i64)>>>");
  EXPECT_EQ(demangle("_RINvCs1_1a1fKj4_E"), "a::f::<4>");  // a const generic argument
  EXPECT_EQ(demangle("_RNvCs1_1a"), "");                   // cut short: left as it is
  EXPECT_EQ(demangle("_RB_"), "");                         // a back reference to itself
}

TEST(Demangle, RustLegacyAndCxx) {
  EXPECT_EQ(demangle("_ZN15sk_rust_kernels14sk_rust_gather28_$u7b$$u7b$closure$u7d$$u7d$17haa50def986008fddE"),
            "sk_rust_kernels::sk_rust_gather::{{closure}}");
  EXPECT_EQ(demangle("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$"
                     "u7d$$GT$17h0123456789abcdefE"),
            "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>");
  EXPECT_EQ(demangle("_ZN2ns3addEii"), "ns::add(int, int)");  // C++: no Rust hash, left to the C++ runtime
  EXPECT_EQ(demangle("memcpy"), "");
  EXPECT_EQ(sk::elf::quoted_symbol("_ZN2ns3addEii"), "'_ZN2ns3addEii' (ns::add(int, int))");
  EXPECT_EQ(sk::elf::quoted_symbol("memcpy"), "'memcpy'");
}

}  // namespace
