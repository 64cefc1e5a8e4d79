"""What the debug information of an object built with -g says a kernel's parameters are, as
signature tokens, and where a signature disagrees with it: `sk inspect` names the parameter
(a struct passed by value given as its members is called with wrong values, and libsk cannot
see that from the code). Objects without DWARF, and DWARF that pyelftools cannot read, are
described without it."""
import io

from elftools.elf.elffile import ELFFile

from ..aggregates import MAX_BYTES, parse_types

_QUALIFIERS = ("DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type",
               "DW_TAG_restrict_type", "DW_TAG_atomic_type")
_POINTERS = ("DW_TAG_pointer_type", "DW_TAG_reference_type", "DW_TAG_rvalue_reference_type")
# DW_ATE_* base type encodings.
_BOOLEAN, _FLOAT, _SIGNED, _SIGNED_CHAR, _UNSIGNED, _UNSIGNED_CHAR = 2, 4, 5, 6, 7, 8


class Unrepresentable(Exception):
    """A parameter type no signature token describes (a union, a long double...)."""


def _strip(die):
    while die is not None and die.tag in _QUALIFIERS:
        die = die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in die.attributes else None
    return die


def _name(die):
    attr = die.attributes.get("DW_AT_name")
    return attr.value.decode(errors="replace") if attr else None


def _token(die, depth=0):
    """The signature token of a type DIE (qualifiers and typedefs looked through)."""
    die = _strip(die)
    if die is None:
        raise Unrepresentable("void")
    if die.tag in _POINTERS:
        return "ptr"
    size = die.attributes["DW_AT_byte_size"].value if "DW_AT_byte_size" in die.attributes else None
    if die.tag == "DW_TAG_base_type":
        encoding = die.attributes["DW_AT_encoding"].value
        if encoding == _FLOAT and size in (4, 8):
            return "f32" if size == 4 else "f64"
        if encoding in (_SIGNED, _SIGNED_CHAR, _UNSIGNED, _UNSIGNED_CHAR, _BOOLEAN) and \
                size in (1, 2, 4, 8):
            return ("i" if encoding in (_SIGNED, _SIGNED_CHAR) else "u") + str(8 * size)
        raise Unrepresentable(f"{_name(die) or 'a base type'} of {size} bytes")
    if die.tag == "DW_TAG_enumeration_type" and size in (1, 2, 4, 8):
        under = die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in die.attributes else None
        return _token(under, depth) if under is not None else "u" + str(8 * size)
    if die.tag == "DW_TAG_structure_type" or die.tag == "DW_TAG_class_type":
        if depth >= 8 or (size or 0) > MAX_BYTES or "DW_AT_declaration" in die.attributes:
            raise Unrepresentable(f"struct {_name(die) or ''} beyond what a signature describes")
        members = []
        for m in die.iter_children():
            if m.tag != "DW_TAG_member" or "DW_AT_data_bit_offset" in m.attributes or \
                    "DW_AT_bit_size" in m.attributes:
                if m.tag == "DW_TAG_member":
                    raise Unrepresentable(f"struct {_name(die) or ''} with bit-fields")
                continue
            members.append(_member(m.get_DIE_from_attribute("DW_AT_type"), depth))
        if not members:
            raise Unrepresentable(f"empty struct {_name(die) or ''}")
        return "{" + ",".join(members) + "}"
    if die.tag == "DW_TAG_union_type":
        raise Unrepresentable(f"union {_name(die) or ''} (signatures describe structs)")
    raise Unrepresentable(die.tag)


def _member(die, depth):
    die = _strip(die)
    if die is not None and die.tag == "DW_TAG_array_type":
        count = 1
        for sub in die.iter_children():
            if sub.tag != "DW_TAG_subrange_type":
                continue
            if "DW_AT_count" in sub.attributes:
                count *= sub.attributes["DW_AT_count"].value
            elif "DW_AT_upper_bound" in sub.attributes:
                count *= sub.attributes["DW_AT_upper_bound"].value + 1
            else:
                raise Unrepresentable("an array of unknown length")
        return f"{_token(die.get_DIE_from_attribute('DW_AT_type'), depth + 1)}[{count}]"
    return _token(die, depth + 1)


def parameters(image):
    """{function name: [(parameter name or None, token or None, why not representable)]} for
    the functions the object defines, from its DWARF; {} without one. Never raises for what
    it cannot read: DWARF is a hint."""
    try:
        elf = ELFFile(io.BytesIO(image))
        if not elf.has_dwarf_info():
            return {}
        dwarf = elf.get_dwarf_info(relocate_dwarf_sections=True)
        found = {}
        for cu in dwarf.iter_CUs():
            for die in cu.iter_DIEs():
                if die.tag != "DW_TAG_subprogram" or "DW_AT_declaration" in die.attributes:
                    continue
                name = _name(die)
                if not name or name in found or ("DW_AT_low_pc" not in die.attributes and
                                                 "DW_AT_ranges" not in die.attributes):
                    continue
                params = []
                for p in die.iter_children():
                    if p.tag != "DW_TAG_formal_parameter":
                        continue
                    try:
                        params.append((_name(p), _token(p.get_DIE_from_attribute("DW_AT_type")), None))
                    except (Unrepresentable, KeyError) as e:
                        params.append((_name(p), None, str(e)))
                found[name] = params
        return found
    except Exception:  # noqa: BLE001 - malformed or unsupported DWARF: described without it
        return {}


def implied_signature(params):
    """The signature the DWARF parameters make, or None where one has no token."""
    if any(token is None for _, token, _ in params):
        return None
    return ",".join(token for _, token, _ in params)


def mismatches(signature, params):
    """Where `signature` disagrees with the DWARF parameters: one message per disagreement,
    naming the parameter; a struct given as its members says so."""
    try:
        given = parse_types(signature)
    except ValueError as e:
        return [str(e)]
    out = []
    for i, (name, token, why) in enumerate(params):
        named = f"parameter {i}" + (f" '{name}'" if name else "")
        if i >= len(given):
            out.append(f"{named} ({token or why}) is missing from the signature, which has "
                       f"{len(given)} parameter(s)")
            break
        if token is None:
            out.append(f"{named}: {why}: no signature token describes it")
        elif token != given[i]:
            hint = ""
            if token.startswith("{") and not given[i].startswith("{"):
                hint = f": it is a struct passed by value, written {token}, not its members"
            out.append(f"{named} is {token} in the debug information, the signature says "
                       f"{given[i]}{hint}")
            break  # the parameters after it are shifted: one message says it
    else:
        if len(given) > len(params):
            out.append(f"the signature has {len(given)} parameters, the debug information "
                       f"{len(params)}")
    return out
