"""The `sk` command line: inspect kernel objects, explain / run / trace scopes described in
JSON, run the benchmark, show what each device gets here. `sk SUBCOMMAND --help` describes each.

Exit status: 0 success; 1 the check failed (sk run: fused and unfused outputs differ);
2 usage error (bad command line); 3 bad input (a file missing or malformed, a scope description
with an error: the message names the file and the field); 4 libsk reported an error (the
message is sk_last_error(), with the call and the status name). Errors go to stderr.
"""
import argparse
import sys

from .errors import InputError, UsageError

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE, EXIT_INPUT, EXIT_LIBSK = 0, 1, 2, 3, 4


def parser():
    from . import bench_cmd, devices_cmd, inspect_cmd, run_cmd, trace_cmd
    p = argparse.ArgumentParser(prog="sk", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="store_true", help="print the binding and library versions")
    sub = p.add_subparsers(dest="command", metavar="SUBCOMMAND")
    inspect_cmd.add_parser(sub)
    run_cmd.add_parsers(sub)
    trace_cmd.add_parser(sub)
    bench_cmd.add_parser(sub)
    devices_cmd.add_parser(sub)
    return p


def main(argv=None, out=None, err=None):
    out, err = out or sys.stdout, err or sys.stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    p = parser()
    if argv[:1] == ["bench"] and argv[1:] not in (["-h"], ["--help"]):
        # Everything after `bench` belongs to sk-bench, options included (argparse would claim
        # them): `sk bench --quick` as well as `sk bench -- --quick`.
        from . import bench_cmd
        args = argparse.Namespace(command="bench", bench_args=argv[1:], run=bench_cmd.run,
                                  version=False)
    else:
        try:
            args = p.parse_args(argv)
        except SystemExit as e:  # argparse: --help (0) or a usage error (2)
            return e.code if isinstance(e.code, int) else EXIT_USAGE
    import superkernel as sk  # loads no library: commands that need libsk load it
    from ..object_file import ObjectFileError
    from .scope_file import SpecError
    name = f"sk {args.command}" if getattr(args, "command", None) else "sk"
    try:
        if args.version:
            out.write(f"sk {sk.__version__}, libsk {'.'.join(map(str, sk.version()))} "
                      f"({sk.library_path()})\n")
            return EXIT_OK
        if not getattr(args, "run", None):
            p.print_usage(err)
            err.write("sk: a subcommand is needed (inspect, explain, run, trace, bench, devices)\n")
            return EXIT_USAGE
        return args.run(args, out, err)
    except UsageError as e:
        err.write(f"{name}: {e}\n")
        return EXIT_USAGE
    except (sk.LibraryNotFound, sk.VersionMismatch) as e:
        err.write(f"{name}: {_one_line(e)}\n")
        return EXIT_INPUT
    except (InputError, SpecError, ObjectFileError) as e:
        err.write(f"{name}: {_one_line(e)}\n")
        return EXIT_INPUT
    except OSError as e:
        err.write(f"{name}: {e.filename or ''}: {e.strerror or e}\n")
        return EXIT_INPUT
    except sk.Error as e:
        err.write(f"{name}: {_one_line(e)}\n")
        return EXIT_LIBSK
    except (TypeError, ValueError, OverflowError) as e:  # arguments that do not fit a signature
        err.write(f"{name}: {_one_line(e)}\n")
        return EXIT_INPUT


def _one_line(e):
    """An error's message on one line (JSON and libsk messages may hold line breaks)."""
    return " ".join(str(e).split("\n"))
