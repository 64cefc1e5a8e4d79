"""The stand-in CUDA driver (tests/cpp/cuda/fake_cuda_driver.cpp) with the simulator as its
runner: while `simulating(path)` is active, each launch of a program libsk compiled from PTX
runs on the simulator, on the driver's device memory, when libsk launches it."""
import contextlib
import ctypes

from .machine import Simulator

_RUNNER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint),
                           ctypes.POINTER(ctypes.c_uint), ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p))
LAUNCH_FAILED = 719  # CUDA_ERROR_LAUNCH_FAILED


class Runs:
    """What the runner saw: the launches it ran (function, grid, block, statements) and the
    first error, which a launch returns as CUDA_ERROR_LAUNCH_FAILED and `check` raises."""

    def __init__(self, lib, seed):
        self.lib, self.launches, self.error, self.seed = lib, [], None, seed
        self.counts = None  # a dict: launches add their statements to it (Simulator.launch's counts)
        self.edit = None  # a function of a program's text giving the text to run instead
        self._programs = {}

    def allocations(self):
        n = self.lib.fake_cuda_allocations(None, 0)
        buf = (ctypes.c_uint64 * (2 * n))()
        self.lib.fake_cuda_allocations(buf, n)
        return [(buf[2 * i], buf[2 * i + 1]) for i in range(n)]

    def simulator(self, text, label):
        sim = self._programs.get(text)
        if sim is None:
            sim = self._programs[text] = Simulator(text, label, self.allocations)
        return sim

    def run(self, ptx, function, grid, block, shared, params):
        if self.error is not None:
            return LAUNCH_FAILED
        try:
            text = ptx.decode()
            if self.edit:
                text = self.edit(text)
            name = function.decode()
            sim = self.simulator(text, f"program {len(self._programs)}")
            fn = sim.ptx.functions[name]
            values = [ctypes.string_at(params[i], p.size) for i, p in enumerate(fn.params)]
            sim.launch(name, (grid[0], grid[1], grid[2]), (block[0], block[1], block[2]), shared, values,
                       seed=None if self.seed is None else self.seed + len(self.launches), counts=self.counts)
            self.launches.append((name, (grid[0], grid[1], grid[2]), (block[0], block[1], block[2]), sim.executed))
            return 0
        except Exception as e:  # a launch fails; the test raises it (check)
            self.error = e
            return LAUNCH_FAILED

    def check(self):
        if self.error is not None:
            raise self.error


@contextlib.contextmanager
def simulating(driver_path, seed=None):
    """Runs the launches of programs on the simulator while active (each with its threads
    interleaved at random from `seed` on, if given); yields a Runs."""
    lib = ctypes.CDLL(driver_path)
    lib.fake_cuda_set_runner.argtypes = [_RUNNER]
    lib.fake_cuda_allocations.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_int]
    runs = Runs(lib, seed)
    callback = _RUNNER(runs.run)
    lib.fake_cuda_set_runner(callback)
    try:
        yield runs
    finally:
        lib.fake_cuda_set_runner(ctypes.cast(None, _RUNNER))
