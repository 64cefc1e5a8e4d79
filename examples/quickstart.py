import sys

import numpy as np
import superkernel as sk

kernel_object = sys.argv[1] if len(sys.argv) > 1 else "quickstart_kernel.o"
with sk.Device("host") as dev:
    saxpy = dev.load(kernel_object).kernel("saxpy")  # signature from SK_KERNEL's record
    x = np.ones(1024, np.float32)
    y = np.zeros(1024, np.float32)  # numpy memory is passed to the kernels as is, no copy
    with dev.scope("quickstart") as scope:  # finalized when the block ends, aborted on error
        for _ in range(3):
            scope.add(saxpy, 4, 2.0, x, y, len(x))  # 4 blocks; y = 2x + y
    scope.superkernel.launch()  # one task runs all three
    dev.synchronize()
    print(f"y[0] = {y[0]} (expected 6)")
    sys.exit(0 if np.all(y == 6.0) else 1)
