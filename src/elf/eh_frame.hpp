// The structure of an .eh_frame section (CIE and FDE records, LSB "Exception Frames"), checked
// before the unwinder is given it: the unwinder trusts the table and aborts the process on an
// encoding it does not know, so a malformed one must fail the load instead.
#pragma once
#include <sk.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sk::elf {

// SK_ERR_BAD_BINARY naming `label`, the section and the record's offset when a record
// overruns the section, an FDE's CIE pointer does not lead to a CIE before it, a CIE's
// version, augmentation or pointer encodings are not ones the unwinder reads, or a 64-bit
// extended length is used (compilers write 32-bit ones).
sk_status check_eh_frame(const uint8_t *data, size_t size, const std::string &label, const std::string &section);

}  // namespace sk::elf
