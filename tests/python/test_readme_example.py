"""The README's Python example is examples/quickstart.py verbatim, and it runs."""
import os
import subprocess
import sys

import superkernel as sk
from conftest import ROOT


def test_readme_shows_quickstart_py_verbatim():
    readme = open(os.path.join(ROOT, "README.md")).read()
    source = open(os.path.join(ROOT, "examples", "quickstart.py")).read()
    assert "```python\n" + source + "```" in readme, \
        "README.md's Python example differs from examples/quickstart.py"


def test_quickstart_py_runs(kernel_dir):
    env = dict(os.environ, SK_LIBRARY=sk.library_path(),
               PYTHONPATH=os.path.dirname(os.path.dirname(sk.__file__)))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py"),
                        os.path.join(kernel_dir, "quickstart_kernel.o")], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "y[0] = 6.0 (expected 6)"
