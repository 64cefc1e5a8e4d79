"""Reads PTX text into functions of decoded statements: what the simulator (machine.py) runs.

Covers the PTX that nvcc, Triton and libsk's own super kernel write: module variables with
initializers, .entry and .func definitions and declarations, nested { } scopes (a register
declared in an inner scope is renamed, so it shadows), labels, .branchtargets, guards, vector
and address operands. Line and debug directives (.loc, .file, .section) are skipped.
"""
import re

TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4,
              "b64": 8, "u64": 8, "s64": 8, "f64": 8, "b128": 16, "pred": 1}


class PtxError(Exception):
    """PTX the simulator cannot read or run, naming where."""


class Variable:
    def __init__(self, name, space, size, align, init):
        self.name, self.space, self.size, self.align, self.init = name, space, size, align, init


class Param:
    def __init__(self, name, size, align):
        self.name, self.size, self.align = name, size, align


class Instr:
    __slots__ = ("op", "parts", "args", "guard", "guard_neg", "line", "text", "ex")

    def __init__(self, op, args, guard, guard_neg, line, text):
        self.op, self.parts, self.args = op, op.split("."), args
        self.guard, self.guard_neg, self.line, self.text = guard, guard_neg, line, text
        self.ex = None


class Function:
    def __init__(self, name, entry, params, rets, line):
        self.name, self.entry, self.params, self.rets, self.line = name, entry, params, rets, line
        self.code, self.labels, self.targets = [], {}, {}
        self.locals = {}      # .local arrays: name -> Variable (offsets assigned at load)
        self.call_params = []  # .param declared in the body: a call's arguments and results
        self.shared = {}      # .shared declared in the body (module-wide, as at module scope)
        self.reqntid = None
        self.defined = False


class Module:
    def __init__(self, label):
        self.label = label
        self.functions = {}
        self.variables = {}   # name -> Variable (.global, .const, .shared; extern shared: size None)


_IDENT = r"[A-Za-z_$%][\w$.%]*"
_LABEL = re.compile(r"^\s*([A-Za-z_$][\w$]*)\s*:(?!:)")
_GUARD = re.compile(r"^@(!?)(%?[\w$]+)\s+")


def _strip(text):
    """Comments, .loc/.file lines and .section blocks out; statements' text kept with lines."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    depth_section, awaiting = 0, False  # inside a .section's braces; before its '{'
    for line in text.split("\n"):
        line = line.split("//", 1)[0]
        s = line.strip()
        if awaiting or depth_section:
            if awaiting and "{" in s:
                awaiting = False
            depth_section += s.count("{") - s.count("}")
            out.append("")
            continue
        if s.startswith(".section"):
            depth_section = s.count("{") - s.count("}")
            awaiting = "{" not in s
            out.append("")
            continue
        if s.split(None, 1)[:1] in ([".loc"], [".file"], ["@@DWARF"], [".pragma"], [".version"], [".target"],
                                    [".address_size"]):
            out.append("")
            continue
        out.append(line)
    return "\n".join(out)


def _statements(text):
    """(kind, text, line): kind 'stmt' (ends in ';'), 'open' (a block's '{', text: what came
    before it on a header) or 'close'."""
    i, n, line, start_line = 0, len(text), 1, 1
    cur = []
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
        if c == ";":
            yield "stmt", "".join(cur), start_line
            cur, start_line = [], line
        elif c == "{":
            s = "".join(cur).strip()
            label = _LABEL.match(s)
            rest = s[label.end():].strip() if label else s
            is_block = rest == "" or (re.search(r"\.(entry|func)\b", rest) and "=" not in rest)
            if is_block:
                yield "open", "".join(cur), start_line
                cur, start_line = [], line
            else:  # a vector operand or an initializer: to the matching brace
                depth = 0
                while i < n:
                    ch = text[i]
                    if ch == "\n":
                        line += 1
                    cur.append(ch)
                    depth += ch == "{"
                    depth -= ch == "}"
                    i += 1
                    if depth == 0:
                        break
                continue
        elif c == "}":
            if "".join(cur).strip():
                yield "stmt", "".join(cur), start_line
            yield "close", "", line
            cur, start_line = [], line
        else:
            if not cur and c.isspace():
                start_line = line + (c == "\n")
            else:
                cur.append(c)
        i += 1
    if "".join(cur).strip():
        yield "stmt", "".join(cur), start_line


def _split_top(s, sep=","):
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _int(tok):
    t = tok.strip()
    neg = t.startswith("-")
    if neg or t.startswith("+"):
        t = t[1:]
    t = t.rstrip("Uu")
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t[0] == "0" and t.isdigit():
        v = int(t, 8)
    else:
        v = int(t)
    return -v if neg else v


def parse_operand(tok):
    t = tok.strip()
    if t.startswith("{"):
        return ("vec", [parse_operand(x) for x in _split_top(t[1:-1])])
    if t.startswith("["):
        inner = t[1:-1].replace(" ", "").replace("\t", "")
        terms = re.findall(r"[+-]?[^+-]+", inner)  # a base, then constants: [x+0+4], [%rd1+-8]
        base, offset = None, 0
        for i, term in enumerate(terms):
            body = term.lstrip("+")
            if re.match(r"^-?(0[xX][0-9a-fA-F]+|\d+)U?$", body):
                offset += _int(body)
            elif i == 0 and not body.startswith("-"):
                base = body
            else:
                raise PtxError(f"address {t}")
        return ("addr", base, offset)
    if t.startswith("(") and t.endswith(")"):
        return ("list", [x.strip() for x in _split_top(t[1:-1])])
    if t.startswith("!"):
        return ("not", t[1:].strip())
    if "|" in t:
        a, b = t.split("|")
        return ("pair", a.strip(), b.strip())
    if t == "_":
        return ("sink",)
    if re.match(r"^0[fF][0-9a-fA-F]{8}$", t):
        return ("imm", int(t[2:], 16), "f32")
    if re.match(r"^0[dD][0-9a-fA-F]{16}$", t):
        return ("imm", int(t[2:], 16), "f64")
    if re.match(r"^[-+]?(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[Uu]?$", t):
        return ("imm", _int(t), None)
    if re.match(r"^[-+]?\d*\.\d+([eE][-+]?\d+)?$", t) or re.match(r"^[-+]?\d+[eE][-+]?\d+$", t):
        return ("fimm", float(t))
    if t.startswith("%"):
        return ("reg", t)
    m = re.match(r"^([\w$.]+)\s*([+-])\s*(\w+)$", t)
    if m:  # a variable's address plus a constant
        off = _int(m.group(3))
        return ("sym", m.group(1), off if m.group(2) == "+" else -off)
    return ("sym", t, 0)


def _param_list(s, where):
    out = []
    for p in _split_top(s):
        if not p:
            continue
        words = p.split()
        name = words[-1]
        size, align = None, None
        m = re.match(r"^([\w$]+)\[(\d*)\]$", name)
        typ = next((w[1:] for w in words if w[1:] in TYPE_BYTES), None)
        if ".align" in words:
            align = int(words[words.index(".align") + 1])
        if m:
            name = m.group(1)
            size = TYPE_BYTES[typ] * int(m.group(2) or 0)
        else:
            size = TYPE_BYTES.get(typ)
        if size is None:
            raise PtxError(f"{where}: parameter {p!r}")
        out.append(Param(name, size, align or min(TYPE_BYTES[typ], 8)))
    return out


def _parse_header(s, line):
    s = " ".join(s.split())
    m = re.search(r"\.(entry|func)\s*(\((.*?)\))?\s*([\w$]+)\s*(\((.*)\))?(.*)$", s)
    if not m:
        raise PtxError(f"line {line}: function header {s!r}")
    entry = m.group(1) == "entry"
    name = m.group(4)
    params_text = m.group(6) or ""
    tail = m.group(7) or ""
    # The parameters' parentheses may be followed by directives: .reqntid 128, .maxntid ...
    if params_text.count("(") != params_text.count(")"):
        raise PtxError(f"line {line}: function header {s!r}")
    rets = _param_list(m.group(3), name) if m.group(3) else []
    params = _param_list(params_text, name)
    f = Function(name, entry, params, rets, line)
    r = re.search(r"\.reqntid\s+([\d\s,]+)", tail)
    if r:
        f.reqntid = [int(x) for x in r.group(1).split(",") if x.strip()]
    return f


def _variable(s, line):
    words = s.replace("=", " = ").split()
    space = next(w[1:] for w in words if w in (".global", ".shared", ".const", ".local"))
    align = int(words[words.index(".align") + 1]) if ".align" in words else None
    typ = next((w[1:] for w in words if w[1:] in TYPE_BYTES), "b8")
    eq = words.index("=") if "=" in words else len(words)
    decl = words[eq - 1]
    m = re.match(r"^([\w$]+)((?:\[\d*\])*)$", decl)
    if not m:
        raise PtxError(f"line {line}: variable {s!r}")
    dims = re.findall(r"\[(\d*)\]", m.group(2))
    size = TYPE_BYTES[typ]
    unsized = False
    for d in dims:
        if d == "":
            unsized = True
        else:
            size *= int(d)
    init = None
    if "=" in s:
        vals = s.split("=", 1)[1].replace("{", " ").replace("}", " ").replace(",", " ").split()
        width = TYPE_BYTES[typ]
        data = bytearray()
        for v in vals:
            op = parse_operand(v)
            if op[0] == "imm":
                data += (op[1] & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
            else:  # an address of another variable or function (generic(x)): not run here
                raise PtxError(f"line {line}: initializer {v!r} of {m.group(1)}")
        if unsized:
            size = len(data)
        init = bytes(data)
    return Variable(m.group(1), space, None if unsized and init is None else size,
                    align or TYPE_BYTES[typ], init)


def parse(text, label="ptx"):
    """A Module of `text`."""
    mod = Module(label)
    fn = None          # the function whose body is open
    pending = None     # a header whose body comes next
    scopes = []        # per open scope: {declared name: renamed}
    depth = 0
    scope_id = 0
    for kind, stmt, line in _statements(_strip(text)):
        s = stmt.strip()
        if kind == "open":
            head = s
            if re.search(r"\.(entry|func)\b", head):
                pending = _parse_header(head, line)
            if depth == 0:
                if pending is None:
                    raise PtxError(f"{label}:{line}: a block outside a function")
                fn, pending = pending, None
                prev = mod.functions.get(fn.name)
                if prev is not None and prev.defined:
                    raise PtxError(f"{label}:{line}: function {fn.name} defined twice")
                fn.defined = True
                mod.functions[fn.name] = fn
                scopes = [{}]
            else:
                m = _LABEL.match(head)
                if m:
                    fn.labels[m.group(1)] = len(fn.code)
                scope_id += 1
                scopes.append({"#": scope_id})
            depth += 1
            continue
        if kind == "close":
            depth -= 1
            if depth < 0:
                raise PtxError(f"{label}:{line}: unbalanced '}}'")
            scopes.pop()
            if depth == 0:
                fn = None
            continue
        if not s:
            continue
        if depth == 0:
            if re.match(r"^\.(version|target|address_size)\b", s):
                continue
            if re.search(r"\.(entry|func)\b", s):
                f = _parse_header(s, line)   # a declaration
                mod.functions.setdefault(f.name, f)
                continue
            if re.search(r"\.(global|shared|const)\b", s):
                v = _variable(s, line)
                mod.variables[v.name] = v
                continue
            raise PtxError(f"{label}:{line}: {s!r}")
        # In a body: labels first.
        while True:
            m = _LABEL.match(s)
            if not m:
                break
            fn.labels[m.group(1)] = len(fn.code)
            s = s[m.end():].strip()
        if not s:
            continue
        if s.startswith(".reg"):
            words = s.split(None, 2)
            for name in _split_top(words[2] if len(words) > 2 else ""):
                name = name.strip()
                r = re.match(r"^(%?[\w$]+)<(\d+)>$", name)
                names = [f"{r.group(1)}{i}" for i in range(int(r.group(2)))] if r else [name]
                if len(scopes) > 1:
                    for nm in names:
                        scopes[-1][nm] = f"{nm}#{scopes[-1]['#']}"
            continue
        if s.startswith(".param"):
            for p in _param_list(s, fn.name):
                if len(scopes) > 1:
                    scopes[-1][p.name] = f"{p.name}#{scopes[-1]['#']}"
                    p.name = scopes[-1][p.name]
                fn.call_params.append(p)
            continue
        if s.startswith(".local"):
            v = _variable(s, line)
            fn.locals[v.name] = v
            continue
        if s.startswith(".shared"):
            v = _variable(s, line)
            mod.variables[v.name] = v
            continue
        if s.startswith(".branchtargets"):
            fn.targets[list(fn.labels)[-1]] = [x.strip() for x in s.split(None, 1)[1].split(",")]
            continue
        if s.startswith("."):
            continue  # .maxnreg and other performance directives inside a body
        g = _GUARD.match(s)
        guard, neg = None, False
        if g:
            neg, guard = g.group(1) == "!", g.group(2)
            s = s[g.end():]
        parts = s.split(None, 1)
        op = parts[0]
        args = [parse_operand(a) for a in _split_top(parts[1])] if len(parts) > 1 else []

        def rename(o):
            if o[0] == "reg" or (o[0] == "sym"):
                for sc in reversed(scopes[1:]):
                    if o[1] in sc:
                        return (o[0], sc[o[1]]) + o[2:]
                return o
            if o[0] == "vec":
                return ("vec", [rename(x) for x in o[1]])
            if o[0] == "addr" and o[1] is not None:
                for sc in reversed(scopes[1:]):
                    if o[1] in sc:
                        return ("addr", sc[o[1]], o[2])
                return o
            if o[0] == "not":
                return ("not", rename(("reg", o[1]))[1])
            if o[0] == "pair":
                return ("pair", rename(("reg", o[1]))[1], rename(("reg", o[2]))[1])
            if o[0] == "list":
                return ("list", [rename(("sym", x, 0))[1] for x in o[1]])
            return o

        if len(scopes) > 1:
            args = [rename(a) for a in args]
            if guard is not None:
                guard = rename(("reg", guard))[1]
        fn.code.append(Instr(op, args, guard, neg, line, s))
    if depth != 0:
        raise PtxError(f"{label}: a block is not closed")
    return mod
