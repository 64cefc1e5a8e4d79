// Several relocatable objects and `ar` archives made into one relocatable object, the way a
// static linker's symbol resolution would (`ld -r` with every archive in one --start-group):
// the host linker then links the result as it links a single object.
//
//  - Every object is part of the result, in the order given; an archive member is pulled in
//    only when a strong undefined symbol of what is already in has no definition there and the
//    member defines it (the archive's index, first archive in input order first), repeated
//    until nothing more is needed. The result does not depend on where the archives stand.
//  - A linker script input that holds only EXTERN(symbol ...) commands (and comments) names
//    symbols to pull in as if an object referenced them, as `ld -u symbol` does: an archive
//    alone (a Rust staticlib) needs no object that calls into it. Each must be defined by the
//    set (SK_ERR_NOT_FOUND naming the script and the symbol).
//  - Global symbols are one per name: a strong definition beats common ones (the largest wins)
//    and weak ones (the first wins); two strong definitions are SK_ERR_BAD_BINARY naming both
//    objects. Local symbols stay each object's own.
//  - COMDAT groups (SHT_GROUP, GRP_COMDAT) with one signature: the first object's is kept, the
//    other objects' sections of that group are dropped and their symbols bind to the kept ones.
//  - The .sk.kernels records of all parts are gathered into the first .sk.kernels section.
#pragma once
#include <sk.h>

#include <string>
#include <string_view>
#include <vector>

#include "elf/elf_object.hpp"

namespace sk::elf {

struct Input {
  std::string label;  // a path, or "<memory #i>"
  const void *bytes = nullptr;
  size_t size = 0;
};

// One input that is not an archive is parsed as parse_object would (the same object, label and
// messages). Otherwise `label` names the set and Object::part_labels each object of it
// (archive members as "libfoo.a(bar.o)"). The inputs' bytes are copied.
sk_status combine(const std::vector<Input> &inputs, std::string_view label, Object *out);

}  // namespace sk::elf
