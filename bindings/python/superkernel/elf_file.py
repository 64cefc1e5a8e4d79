"""A kernel object that libsk has not loaded, read with pyelftools: what `sk inspect` shows of
its sections, symbols and relocations. Its kernels, and the device API their code reaches, are
libsk's reading (sk_module_inspect).

pyelftools decodes; this module first checks that every header and table it will decode lies in
the file, so that malformed input raises ElfError naming the part that is wrong (pyelftools
would read past a table's end, or fail with a parse error that names no section).
"""
import io
from collections import Counter, namedtuple

from elftools.common.exceptions import ELFError as _PyElfError
from elftools.common.utils import struct_parse
from elftools.elf.descriptions import describe_reloc_type
from elftools.elf.elffile import ELFFile
from elftools.elf.enums import ENUM_E_MACHINE, ENUM_E_TYPE
from elftools.elf.structs import ELFStructs

from .checks import c_text

Section = namedtuple("Section", "index name type flags offset size link info entsize")
Symbol = namedtuple("Symbol", "name value size type bind shndx")  # type, bind: "FUNC", "GLOBAL"
Relocation = namedtuple("Relocation", "offset type symbol addend")

# How sk inspect names what pyelftools calls EM_X86_64, ET_REL, SHT_AMD64_UNWIND...
MACHINE_NAMES = {"EM_X86_64": "x86-64", "EM_AARCH64": "AArch64", "EM_386": "i386", "EM_ARM": "ARM",
                 "EM_RISCV": "RISC-V"}
ELF_TYPE_NAMES = {"ET_NONE": "NONE", "ET_REL": "REL (relocatable object)", "ET_EXEC": "EXEC",
                  "ET_DYN": "DYN (shared object)", "ET_CORE": "CORE"}
SECTION_TYPE_NAMES = {"SHT_AMD64_UNWIND": "X86_64_UNWIND", 0x70000001: "X86_64_UNWIND",  # others:
                      0x70000003: "ARM_ATTRIBUTES", 0x6FFF4C03: "LLVM_ADDRSIG"}  # pyelftools' less SHT_
# Relocation types pyelftools has no name for (0.29, Debian 12's, lacks gcc's usual GOT load).
RELOCATION_NAMES = {("EM_X86_64", 41): "R_X86_64_GOTPCRELX",
                    ("EM_AARCH64", 299): "R_AARCH64_LDST128_ABS_LO12_NC"}
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR = 0x1, 0x2, 0x4
SHT_NOBITS = "SHT_NOBITS"
_RELOCATION_TYPES = ("SHT_REL", "SHT_RELA")


class ElfError(ValueError):
    pass


class ElfObject:
    def __init__(self, image, name="<bytes>"):
        self.image, self.name = bytes(image), name
        if len(self.image) < 6 or self.image[:4] != b"\x7fELF":
            raise ElfError(f"{name}: not an ELF file (no \\x7fELF magic)")
        if self.image[4] not in (1, 2) or self.image[5] not in (1, 2):
            raise ElfError(f"{name}: bad ELF class {self.image[4]} or data encoding "
                           f"{self.image[5]}")
        self.is64 = self.image[4] == 2
        what = "ELF64" if self.is64 else "ELF32"
        header_size = 64 if self.is64 else 52
        if len(self.image) < header_size:
            raise ElfError(f"{name}: truncated ELF header ({len(self.image)} bytes; an {what} "
                           f"header has {header_size})")
        self._stream = stream = io.BytesIO(self.image)
        structs = ELFStructs(little_endian=self.image[5] == 1, elfclass=64 if self.is64 else 32)
        structs.create_basic_structs()
        header = struct_parse(structs.Elf_Ehdr, stream, stream_pos=0)
        shoff, shnum, shentsize = header["e_shoff"], header["e_shnum"], header["e_shentsize"]
        expected = 64 if self.is64 else 40
        if shnum and shentsize != expected:
            raise ElfError(f"{name}: section header size {shentsize} (e_shentsize; {what} has "
                           f"{expected})")
        if shoff + shnum * shentsize > len(self.image):
            raise ElfError(f"{name}: section table (offset {shoff}, {shnum} entries) lies past "
                           f"the end of the file ({len(self.image)} bytes)")
        structs.create_advanced_structs(header["e_type"], header["e_machine"],
                                        header["e_ident"]["EI_OSABI"])
        self.structs = structs
        self._headers = [struct_parse(structs.Elf_Shdr, stream, stream_pos=shoff + i * shentsize)
                         for i in range(shnum)]
        self.sections = self._read_sections(header["e_shstrndx"])
        try:  # after the checks: it reads the section name table
            self.elf = ELFFile(stream)
        except _PyElfError as e:
            raise ElfError(f"{name}: {e}") from None
        self.machine = _number(header["e_machine"], ENUM_E_MACHINE)
        self.machine_name = MACHINE_NAMES.get(header["e_machine"], f"machine {self.machine}")
        self.elf_type_name = ELF_TYPE_NAMES.get(header["e_type"], str(_number(header["e_type"], ENUM_E_TYPE)))
        self._symbols = None

    # ---- sections ----------------------------------------------------------------------------
    def _read_sections(self, shstrndx):
        raw = [Section(i, "", h["sh_type"], h["sh_flags"], h["sh_offset"], h["sh_size"],
                       h["sh_link"], h["sh_info"], h["sh_entsize"])
               for i, h in enumerate(self._headers)]
        if not 0 < shstrndx < len(raw):
            return raw
        names = raw[shstrndx]
        self._in_file(names, f"section name table (section {shstrndx})")
        return [s._replace(name=self._string(names, h["sh_name"])) for s, h in zip(raw, self._headers)]

    def _in_file(self, section, what):
        """Raises ElfError naming what unless section's bytes lie inside the file."""
        if section.type != SHT_NOBITS and section.offset + section.size > len(self.image):
            raise ElfError(f"{self.name}: {what} (offset {section.offset}, {section.size} "
                           f"bytes) runs past the end of the file ({len(self.image)} bytes)")

    def _string(self, section, index):
        """The string at index of a string table checked to lie in the file (whatever its
        sh_type says); a name past the table or without its NUL in it reads as <bad name N>."""
        start = section.offset + index
        end = -1 if section.type == SHT_NOBITS or index >= section.size else \
            self.image.find(b"\0", start, section.offset + section.size)
        return f"<bad name {index}>" if end < 0 else c_text(self.image[start:end])

    def section_type_name(self, section):
        t = section.type
        if t in SECTION_TYPE_NAMES:
            return SECTION_TYPE_NAMES[t]
        return t[4:] if isinstance(t, str) else hex(t)

    def _entries(self, section, size, what):
        """Checks that a table section lies in the file and holds whole `size`-byte entries."""
        self._in_file(section, f"{what} section {section.name}")
        if section.size % size:
            raise ElfError(f"{self.name}: {what} section {section.name}: size {section.size} is "
                           f"not a multiple of its entry size {size}")

    def _decode(self, struct, section, size):
        """pyelftools' decoding of each `size`-byte entry of a table the checks above passed
        (by offset: its sections would want a name table and an sh_entsize to trust)."""
        return [struct_parse(struct, self._stream, stream_pos=at)
                for at in range(section.offset, section.offset + section.size, size)]

    # ---- symbols -----------------------------------------------------------------------------
    @property
    def symbols(self):
        if self._symbols is None:
            self._symbols = self._read_symbols()
        return self._symbols

    def _read_symbols(self):
        symtab = next((s for s in self.sections if s.type == "SHT_SYMTAB"), None)
        if symtab is None:
            return []
        if not 0 < symtab.link < len(self.sections):
            raise ElfError(f"{self.name}: symbol table {symtab.name}: its string table "
                           f"(sh_link {symtab.link}) is not a section")
        strtab = self.sections[symtab.link]
        self._in_file(strtab, f"string table {strtab.name}")
        size = 24 if self.is64 else 16
        self._entries(symtab, size, "symbol table")
        symbols = []
        for entry in self._decode(self.structs.Elf_Sym, symtab, size):
            info = entry["st_info"]
            symbols.append(Symbol(self._string(strtab, entry["st_name"]), entry["st_value"],
                                  entry["st_size"], _strip(info["type"], "STT_"),
                                  _strip(info["bind"], "STB_"), entry["st_shndx"]))
        return symbols

    def undefined_symbols(self):
        return sorted({s.name for s in self.symbols if s.shndx == "SHN_UNDEF" and s.name})

    # ---- relocations -------------------------------------------------------------------------
    def relocation_sections(self):
        """(target section, relocation section) pairs."""
        return [(self.sections[s.info], s) for s in self.sections
                if s.type in _RELOCATION_TYPES and s.info < len(self.sections)]

    def relocations(self, section):
        """Relocations of a REL/RELA section, with their symbols resolved."""
        rela = section.type == "SHT_RELA"
        size = (24 if rela else 16) if self.is64 else (12 if rela else 8)
        self._entries(section, size, "relocation")
        out = []
        structs = self.structs
        for r in self._decode(structs.Elf_Rela if rela else structs.Elf_Rel, section, size):
            sym = r["r_info_sym"]
            symbol = self.symbols[sym] if sym < len(self.symbols) else None
            out.append(Relocation(r["r_offset"], r["r_info_type"], symbol,
                                  r["r_addend"] if rela else 0))
        return out

    def relocation_name(self, typ):
        name = RELOCATION_NAMES.get((self.elf["e_machine"], typ)) or describe_reloc_type(typ, self.elf)
        return name if name.startswith("R_") else f"type {typ}"

    def relocation_summary(self):
        """{target section name: Counter(relocation type name)}."""
        return {target.name: Counter(self.relocation_name(r.type) for r in self.relocations(rel))
                for target, rel in self.relocation_sections()}


def _number(value, enum):
    """pyelftools gives known enum values by name, others as numbers."""
    return enum[value] if isinstance(value, str) else value


def _strip(value, prefix):
    return value[len(prefix):] if isinstance(value, str) and value.startswith(prefix) else value
