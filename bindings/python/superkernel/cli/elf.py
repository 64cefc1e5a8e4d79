"""A small reader of ELF relocatable objects for `sk inspect`: sections, symbols, relocations.

It reads what inspection shows and nothing more (libsk's own reader, in C++, is what loads
objects). ELF64 and ELF32, either byte order. Malformed input raises ElfError naming what is
wrong.
"""
import struct
from collections import Counter, namedtuple

Section = namedtuple("Section", "index name type flags offset size link info entsize")
Symbol = namedtuple("Symbol", "name value size type bind shndx")
Relocation = namedtuple("Relocation", "offset type symbol addend")

SECTION_TYPES = {0: "NULL", 1: "PROGBITS", 2: "SYMTAB", 3: "STRTAB", 4: "RELA", 7: "NOTE",
                 8: "NOBITS", 9: "REL", 14: "INIT_ARRAY", 15: "FINI_ARRAY", 17: "GROUP",
                 18: "SYMTAB_SHNDX", 0x6FFFFFF5: "GNU_ATTRIBUTES", 0x70000003: "ARM_ATTRIBUTES",
                 0x6FFF4C03: "LLVM_ADDRSIG", 0x70000001: "X86_64_UNWIND"}
SYMBOL_TYPES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 6: "TLS",
                10: "GNU_IFUNC"}
SYMBOL_BINDS = {0: "LOCAL", 1: "GLOBAL", 2: "WEAK", 10: "GNU_UNIQUE"}
MACHINES = {62: "x86-64", 183: "AArch64", 3: "i386", 40: "ARM", 243: "RISC-V"}
ELF_TYPES = {0: "NONE", 1: "REL (relocatable object)", 2: "EXEC", 3: "DYN (shared object)",
             4: "CORE"}
SHF_ALLOC, SHF_EXECINSTR, SHF_WRITE = 0x2, 0x4, 0x1

RELOCATION_NAMES = {
    62: {0: "R_X86_64_NONE", 1: "R_X86_64_64", 2: "R_X86_64_PC32", 3: "R_X86_64_GOT32",
         4: "R_X86_64_PLT32", 9: "R_X86_64_GOTPCREL", 10: "R_X86_64_32", 11: "R_X86_64_32S",
         16: "R_X86_64_DTPMOD64", 17: "R_X86_64_DTPOFF64", 18: "R_X86_64_TPOFF64",
         19: "R_X86_64_TLSGD", 20: "R_X86_64_TLSLD", 21: "R_X86_64_DTPOFF32",
         22: "R_X86_64_GOTTPOFF", 23: "R_X86_64_TPOFF32", 24: "R_X86_64_PC64",
         25: "R_X86_64_GOTOFF64", 26: "R_X86_64_GOTPC32", 41: "R_X86_64_GOTPCRELX",
         42: "R_X86_64_REX_GOTPCRELX"},
    183: {257: "R_AARCH64_ABS64", 258: "R_AARCH64_ABS32", 260: "R_AARCH64_PREL64",
          261: "R_AARCH64_PREL32", 263: "R_AARCH64_MOVW_UABS_G0", 275: "R_AARCH64_ADR_PREL_PG_HI21",
          277: "R_AARCH64_ADD_ABS_LO12_NC", 278: "R_AARCH64_LDST8_ABS_LO12_NC",
          279: "R_AARCH64_TSTBR14", 280: "R_AARCH64_CONDBR19", 282: "R_AARCH64_JUMP26",
          283: "R_AARCH64_CALL26", 284: "R_AARCH64_LDST16_ABS_LO12_NC",
          285: "R_AARCH64_LDST32_ABS_LO12_NC", 286: "R_AARCH64_LDST64_ABS_LO12_NC",
          299: "R_AARCH64_LDST128_ABS_LO12_NC", 311: "R_AARCH64_ADR_GOT_PAGE",
          312: "R_AARCH64_LD64_GOT_LO12_NC"},
}


class ElfError(ValueError):
    pass


class ElfObject:
    """Every read is bounds-checked: a header, table or section that runs past the end of the
    file raises ElfError naming it."""

    def __init__(self, image, name="<bytes>"):
        self.image, self.name = bytes(image), name
        if len(self.image) < 6 or self.image[:4] != b"\x7fELF":
            raise ElfError(f"{name}: not an ELF file (no \\x7fELF magic)")
        if self.image[4] not in (1, 2) or self.image[5] not in (1, 2):
            raise ElfError(f"{name}: bad ELF class {self.image[4]} or data encoding "
                           f"{self.image[5]}")
        self.is64, self.order = self.image[4] == 2, "<" if self.image[5] == 1 else ">"
        header = 64 if self.is64 else 52
        if len(self.image) < header:
            raise ElfError(f"{name}: truncated ELF header ({len(self.image)} bytes; an "
                           f"{'ELF64' if self.is64 else 'ELF32'} header has {header})")
        self._read_header()
        self.sections = self._read_sections()
        self.symbols = self._read_symbols()

    def _unpack(self, fmt, offset, what):
        size = struct.calcsize(self.order + fmt)
        if offset < 0 or offset + size > len(self.image):
            raise ElfError(f"{self.name}: {what} (offset {offset}, {size} bytes) runs past the "
                           f"end of the file ({len(self.image)} bytes)")
        return struct.unpack_from(self.order + fmt, self.image, offset)

    def _read_header(self):
        self.elf_type, self.machine = self._unpack("HH", 16, "the ELF header")
        if self.is64:
            self.shoff, = self._unpack("Q", 0x28, "the ELF header")
            self.shentsize, self.shnum, self.shstrndx = self._unpack("HHH", 0x3A, "the ELF header")
        else:
            self.shoff, = self._unpack("I", 0x20, "the ELF header")
            self.shentsize, self.shnum, self.shstrndx = self._unpack("HHH", 0x2E, "the ELF header")
        expected = 64 if self.is64 else 40
        if self.shnum and self.shentsize != expected:
            raise ElfError(f"{self.name}: section header size {self.shentsize} (e_shentsize; "
                           f"{'ELF64' if self.is64 else 'ELF32'} has {expected})")
        if self.shoff + self.shnum * self.shentsize > len(self.image):
            raise ElfError(f"{self.name}: section table (offset {self.shoff}, {self.shnum} "
                           f"entries) lies past the end of the file ({len(self.image)} bytes)")

    def _read_sections(self):
        raw = []
        for i in range(self.shnum):
            at, what = self.shoff + i * self.shentsize, f"section header {i}"
            if self.is64:
                name, typ, flags, _, off, size, link, info, _, entsize = \
                    self._unpack("IIQQQQIIQQ", at, what)
            else:
                name, typ, flags, _, off, size, link, info, _, entsize = \
                    self._unpack("IIIIIIIIII", at, what)
            raw.append((name, Section(i, "", typ, flags, off, size, link, info, entsize)))
        names = raw[self.shstrndx][1] if 0 < self.shstrndx < len(raw) else None
        if names is not None:
            self._in_file(names, f"section name table (section {self.shstrndx})")
        return [s._replace(name=self._string(names, name)) if names is not None else s
                for name, s in raw]

    def _in_file(self, section, what):
        """Raises ElfError naming what unless section's bytes lie inside the file."""
        if section.type != 8 and section.offset + section.size > len(self.image):
            raise ElfError(f"{self.name}: {what} (offset {section.offset}, {section.size} "
                           f"bytes) runs past the end of the file ({len(self.image)} bytes)")

    def _string(self, table, index):
        """The NUL-terminated string at index of string table section `table` (checked to lie in
        the file); a name past the table or without its NUL reads as <bad name N>."""
        if table.type == 8 or index >= table.size:
            return f"<bad name {index}>"
        end = self.image.find(b"\0", table.offset + index, table.offset + table.size)
        if end < 0:
            return f"<bad name {index}>"
        return self.image[table.offset + index:end].decode(errors="replace")

    def data(self, section):
        if section.type == 8:  # NOBITS: no bytes in the file
            return b""
        self._in_file(section, f"section {section.name}")
        return self.image[section.offset:section.offset + section.size]

    def _entries(self, section, size, what):
        """The offsets of the `size`-byte entries of a table section, checked."""
        self._in_file(section, f"{what} section {section.name}")
        if section.size % size:
            raise ElfError(f"{self.name}: {what} section {section.name}: size {section.size} is "
                           f"not a multiple of its entry size {size}")
        return range(section.offset, section.offset + section.size, size)

    def _read_symbols(self):
        symtab = next((s for s in self.sections if s.type == 2), None)
        if symtab is None:
            return []
        if not 0 < symtab.link < len(self.sections):
            raise ElfError(f"{self.name}: symbol table {symtab.name}: its string table "
                           f"(sh_link {symtab.link}) is not a section")
        strtab = self.sections[symtab.link]
        self._in_file(strtab, f"string table {strtab.name}")
        fmt, size = ("IBBHQQ", 24) if self.is64 else ("IIIBBH", 16)
        symbols = []
        for at in self._entries(symtab, size, "symbol table"):
            if self.is64:
                name, info, _, shndx, value, sz = self._unpack(fmt, at, "a symbol")
            else:
                name, value, sz, info, _, shndx = self._unpack(fmt, at, "a symbol")
            symbols.append(Symbol(self._string(strtab, name), value, sz,
                                  info & 0xF, info >> 4, shndx))
        return symbols

    def relocations(self, section):
        """Relocations of a REL/RELA section, with their symbols resolved."""
        rela = section.type == 4
        if self.is64:
            fmt, size = ("QQq", 24) if rela else ("QQ", 16)
        else:
            fmt, size = ("IIi", 12) if rela else ("II", 8)
        out = []
        for at in self._entries(section, size, "relocation"):
            fields = self._unpack(fmt, at, f"a relocation of {section.name}")
            offset, info = fields[0], fields[1]
            sym, typ = (info >> 32, info & 0xFFFFFFFF) if self.is64 else (info >> 8, info & 0xFF)
            symbol = self.symbols[sym] if sym < len(self.symbols) else None
            out.append(Relocation(offset, typ, symbol, fields[2] if rela else 0))
        return out

    def relocation_name(self, typ):
        return RELOCATION_NAMES.get(self.machine, {}).get(typ, f"type {typ}")

    def relocation_sections(self):
        """(target section, relocation section) pairs."""
        return [(self.sections[s.info], s) for s in self.sections
                if s.type in (4, 9) and s.info < len(self.sections)]

    def relocation_summary(self):
        """{target section name: Counter(relocation type name)}."""
        return {target.name: Counter(self.relocation_name(r.type)
                                     for r in self.relocations(rel))
                for target, rel in self.relocation_sections()}

    def undefined_symbols(self):
        return sorted({s.name for s in self.symbols if s.shndx == 0 and s.name})

    def _function_at(self, shndx, offset):
        for s in self.symbols:
            if s.type == 2 and s.shndx == shndx and s.value <= offset < s.value + max(s.size, 1):
                return s
        return None

    def _direct_references(self, function):
        """(undefined symbol names, functions of this object) that relocations inside
        `function`'s bytes refer to."""
        undefined, functions = set(), set()
        for target, rel in self.relocation_sections():
            if target.index != function.shndx:
                continue
            for r in self.relocations(rel):
                if not function.value <= r.offset < function.value + max(function.size, 1):
                    continue
                sym = r.symbol
                if sym is None:
                    continue
                if sym.shndx == 0 and sym.name:
                    undefined.add(sym.name)
                elif sym.type == 2:
                    functions.add(sym)
                elif sym.type == 3:  # section symbol + addend (+4 for x86-64 PC-relative)
                    pc_relative = self.machine == 62 and r.type in (2, 4)
                    callee = self._function_at(sym.shndx, r.addend + (4 if pc_relative else 0))
                    if callee is not None:
                        functions.add(callee)
        return undefined, functions

    def function_references(self, function):
        """Names of the undefined symbols that code reachable from `function` refers to, through
        relocations (calls to functions of the same section that the assembler resolved
        without a relocation are not seen: libsk's own analysis, `sk inspect --load`, is)."""
        seen, todo, refs = {function}, [function], set()
        while todo:
            undefined, callees = self._direct_references(todo.pop())
            refs |= undefined
            for c in callees - seen:
                seen.add(c)
                todo.append(c)
        return refs
