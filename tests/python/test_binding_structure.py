"""The binding's own structure: no import cycles (every module imports alone), and every ctypes
prototype and Structure agrees with include/sk.h — types and layouts, not only names."""
import ast
import ctypes
import os
import re
import subprocess
import sys

import pytest

import superkernel as sk
from conftest import ROOT
from superkernel._lib import PROTOTYPES, KernelDesc, KernelOptions, ProfileRecordC, TensorMapDesc

PACKAGE_DIR = os.path.dirname(os.path.abspath(sk.__file__))
HEADER = os.path.join(ROOT, "include", "sk.h")
#: sk.h's structs with fields, and the ctypes Structure the binding passes for each.
STRUCTURES = {"sk_kernel_options": KernelOptions, "sk_profile_record": ProfileRecordC,
              "sk_kernel_desc": KernelDesc, "sk_tensor_map_desc": TensorMapDesc}


# ---- import cycles -----------------------------------------------------------------------------
def package_modules():
    """{module name: path} of every module of the superkernel package, subpackages included."""
    modules = {}
    root = os.path.dirname(PACKAGE_DIR)
    for folder, _, files in os.walk(PACKAGE_DIR):
        for f in files:
            if f.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, f), root)[:-3].split(os.sep)
                modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = \
                    os.path.join(folder, f)
    return modules


def import_graph(modules):
    """{module: modules it imports}, from every import statement in it, those inside functions
    included: a late import only hides a cycle until the function runs."""
    graph = {}
    for name, path in modules.items():
        package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(open(path).read(), path)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                if node.level == 0:
                    base = node.module
                elif node.module:
                    base = f"{base}.{node.module}"
                # `from . import x` names submodule x, or a name defined by the package.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in modules and t != name}
        graph[name] = edges
    return graph


def find_cycle(graph):
    """One import cycle as [a, b, ..., a], or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_binding_has_no_import_cycle():
    graph = import_graph(package_modules())
    # The walk sees imports at the top and inside functions.
    assert "superkernel.buffer" in graph["superkernel.args"]
    assert "superkernel.cli.inspect_object" in graph["superkernel.cli.inspect_cmd"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("module", sorted(m for m in package_modules() if not m.endswith("__main__")))
def test_every_module_imports_alone(module):  # (__main__ runs `sk` when imported)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.path.dirname(PACKAGE_DIR)
    r = subprocess.run([sys.executable, "-c", f"import {module}"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


# ---- prototypes --------------------------------------------------------------------------------
def header_text():
    text = open(HEADER).read()
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def header_functions():
    """{name: (return type, [parameter types])} of every SK_API function of sk.h, as C text."""
    functions = {}
    for ret, name, params in re.findall(r"SK_API\s+([^;()]*?)\b(sk_\w+)\s*\(([^)]*)\)\s*;",
                                        header_text()):
        types = []
        for p in params.split(","):
            p = " ".join(p.replace("*", " * ").split())
            if p != "void":  # (void): no parameters
                types.append(re.sub(r"\s*\b\w+$", "", p) if re.search(r"[\w*]\s+\w+$", p) else p)
        functions[name] = (" ".join(ret.replace("*", " * ").split()), types)
    return functions


def expected_ctype(c_type):
    """The ctypes type a C parameter or return type of sk.h must be bound as."""
    opaque = set(re.findall(r"typedef struct (\w+) \1;", header_text()))
    tokens = [t for t in c_type.split() if t != "const"]
    depth, base = tokens.count("*"), " ".join(t for t in tokens if t != "*")
    scalars = {"sk_status": ctypes.c_int, "int": ctypes.c_int, "uint32_t": ctypes.c_uint32,
               "size_t": ctypes.c_size_t}
    if depth == 0:
        return None if base == "void" else scalars[base]
    if base == "char":
        pointee = ctypes.c_char_p
    elif base == "void" or base in opaque:
        pointee = ctypes.c_void_p
    elif base in STRUCTURES:
        pointee = ctypes.POINTER(STRUCTURES[base])
    else:
        pointee = ctypes.POINTER(scalars[base])
    for _ in range(depth - 1):
        pointee = ctypes.POINTER(pointee)
    return pointee


def test_the_header_parser_reads_prototypes():
    functions = header_functions()
    assert functions["sk_version"] == ("uint32_t", [])
    assert functions["sk_module_load_images"][1] == [
        "sk_device *", "const void * const *", "const size_t *", "size_t", "sk_module * *"]
    assert expected_ctype("const char * const *") is ctypes.POINTER(ctypes.c_char_p)


def test_every_prototype_matches_sk_h():
    functions = header_functions()
    assert set(functions) == set(PROTOTYPES), set(functions) ^ set(PROTOTYPES)
    for name, (ret, params) in functions.items():
        restype, argtypes = PROTOTYPES[name]
        assert restype is expected_ctype(ret), (name, ret, restype)
        assert len(argtypes) == len(params), (name, params, argtypes)
        for i, (c_type, bound) in enumerate(zip(params, argtypes)):
            assert bound is expected_ctype(c_type), (name, i, c_type, bound)


# ---- struct layouts ----------------------------------------------------------------------------
def c_layout(tmp_path):
    """{struct: (sizeof, alignof, {field: (offsetof, sizeof)})} as the C compiler lays sk.h out."""
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <sk.h>", "int main(void) {"]
    for struct, cls in STRUCTURES.items():
        lines.append(f'  printf("{struct} - %zu %zu\\n", sizeof({struct}), _Alignof({struct}));')
        for field, _ in cls._fields_:
            lines.append(f'  printf("{struct} {field} %zu %zu\\n", offsetof({struct}, {field}), '
                         f'sizeof((({struct} *)0)->{field}));')
    lines += ["  return 0;", "}"]
    source, exe = tmp_path / "layout.c", tmp_path / "layout"
    source.write_text("\n".join(lines) + "\n")
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-std=c11", "-I", os.path.join(ROOT, "include"), str(source), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    layout = {}
    for line in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines():
        struct, field, a, b = line.split()
        entry = layout.setdefault(struct, [None, None, {}])
        if field == "-":
            entry[0], entry[1] = int(a), int(b)
        else:
            entry[2][field] = (int(a), int(b))
    return layout


def test_every_structure_matches_sk_h(tmp_path):
    layout = c_layout(tmp_path)
    for struct, cls in STRUCTURES.items():
        size, align, fields = layout[struct]
        assert (ctypes.sizeof(cls), ctypes.alignment(cls)) == (size, align), struct
        for field, _ in cls._fields_:
            descriptor = getattr(cls, field)
            assert (descriptor.offset, descriptor.size) == fields[field], (struct, field)


def test_every_struct_of_sk_h_has_a_structure():
    bodies = set(re.findall(r"typedef struct (\w+) \{", header_text()))
    assert bodies == set(STRUCTURES), bodies ^ set(STRUCTURES)


def test_only_reading_objects_needs_pyelftools(tmp_path, ops_path):
    code = ("import io, sys\n"
            "class NoElftools:  # as if pyelftools were not installed\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name.partition('.')[0] == 'elftools':\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NoElftools())\n"
            "import superkernel, superkernel.cli as cli\n"
            "err = io.StringIO()\n"
            "print(cli.main(['inspect', 'x.o'], io.StringIO(), err), err.getvalue().strip())\n"
            "print(superkernel.kernel_records(open(sys.argv[1], 'rb').read()))\n"
            "import elftools\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(PACKAGE_DIR))
    # The start of an ELF64 host object: sk inspect reads CUDA modules without pyelftools.
    (tmp_path / "x.o").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(57))
    r = subprocess.run([sys.executable, "-c", code, ops_path], env=env, capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.stdout.startswith("3 sk inspect: reading objects needs pyelftools"), r.stdout
    # kernel_records asks libsk: it needs no pyelftools (the last line's import does).
    assert "'axpy': {'sig': 'f32,ptr,ptr,u32', 'type': 'vector'}" in r.stdout, r.stdout
    assert "ModuleNotFoundError" in r.stderr and "elftools" in r.stderr


# ---- status codes ------------------------------------------------------------------------------
def header_statuses():
    """{name: value} of sk.h's sk_status enum."""
    body = re.search(r"typedef enum sk_status \{([^}]*)\} sk_status;", header_text()).group(1)
    return {name: int(value) for name, value in re.findall(r"\b(SK_\w+)\s*=\s*(\d+)", body)}


def test_the_header_parser_reads_statuses():
    statuses = header_statuses()
    assert statuses["SK_OK"] == 0 and statuses["SK_ERR_INVALID_ARGUMENT"] == 1
    assert len(set(statuses.values())) == len(statuses)


def test_every_status_has_its_exception():
    """errors.py copies sk.h's values: one class per error status, named after it
    (InvalidArgument for SK_ERR_INVALID_ARGUMENT, DeviceError for SK_ERR_DEVICE)."""
    statuses = header_statuses()
    errors = {value for name, value in statuses.items() if name != "SK_OK"}
    assert set(sk.errors.BY_STATUS) == errors, set(sk.errors.BY_STATUS) ^ errors
    for status, cls in sk.errors.BY_STATUS.items():
        assert cls.status == status, cls
        words = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).upper().removesuffix("_ERROR")
        assert statuses.get("SK_ERR_" + words) == status, (cls.__name__, status)


def test_every_flag_the_binding_copies_has_sk_hs_value():
    """The flags and sizes the binding copies from sk.h (KERNEL_FLAG_BLOCK_LOCAL for
    SK_KERNEL_FLAG_BLOCK_LOCAL, KERNEL_DESC_COOPERATIVE, TENSOR_MAP_BYTES) have its values."""
    import superkernel._lib
    import superkernel.scope
    defines = dict(re.findall(r"#define SK_((?:KERNEL_FLAG|KERNEL_DESC)_\w+|TENSOR_MAP_BYTES) (0x[0-9a-f]+|\d+)u?\b",
                              header_text()))
    assert {"KERNEL_FLAG_BLOCK_LOCAL", "KERNEL_DESC_COOPERATIVE", "TENSOR_MAP_BYTES"} <= set(defines)
    for name, value in defines.items():
        copies = [getattr(m, name) for m in (sk, superkernel._lib, superkernel.scope) if hasattr(m, name)]
        assert copies, f"the binding has no {name} (sk.h's SK_{name})"
        assert all(c == int(value, 0) for c in copies), (name, copies, value)
