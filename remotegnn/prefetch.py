"""Software prefetch for numba kernels: ask the CPU to start loading a cache line now, so the
load a few iterations later finds it in cache.

Why: sampling and gathering are chains of random reads (a node's CSC segment, its neighbours'
batch-local ids, their feature rows). In a loop whose body is long, the CPU's out-of-order window
covers only an iteration or two, so each random read waits out most of a memory latency on its
own. Issuing the reads of the next iterations ahead of time keeps many misses in flight at once;
on the R-MAT benchmark graph that nearly halves a batch's sampling time. numba has no prefetch
of its own, so this exposes LLVM's ``llvm.prefetch`` intrinsic, which never faults and changes no
value (a hint only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numba
import numpy as np
from llvmlite import ir  # type: ignore[import-untyped]  # llvmlite ships no type information
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload
from numba.np.numpy_support import as_dtype

CACHE_LINE_BYTES = 64
_READ = 0  # llvm.prefetch: 0 = read, 1 = write
_KEEP_IN_ALL_LEVELS = 3  # locality 3: keep in every cache level
_DATA_CACHE = 1  # 1 = data, 0 = instruction


if TYPE_CHECKING:
    # How jitted code calls the intrinsic below. numba's stubs type an @intrinsic as its typing
    # function, the typing context counted as an argument, and as never returning (a call from
    # pure Python raises), which would hide the code after each call from the checker.
    def prefetch(array: np.ndarray, index: int) -> None: ...

else:

    @intrinsic
    def prefetch(typingctx, array, index):
        """Hint that ``array``'s element at flat offset ``index`` (C order, from its first element)
        will be read soon. Never faults, even out of bounds; the call sites still keep in bounds."""
        if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
            return None
        signature = types.void(array, index)

        def codegen(context, builder, sig, args):
            data = context.make_array(sig.args[0])(context, builder, args[0]).data
            address = builder.bitcast(builder.gep(data, [args[1]]), ir.IntType(8).as_pointer())
            i32 = ir.IntType(32)
            hint = ir.FunctionType(ir.VoidType(), [address.type, i32, i32, i32])
            function = cgutils.get_or_insert_function(builder.module, hint, "llvm.prefetch.p0i8")
            flags = [ir.Constant(i32, value) for value in (_READ, _KEEP_IN_ALL_LEVELS, _DATA_CACHE)]
            builder.call(function, [address, *flags])
            return context.get_dummy_value()

        return signature, codegen


def line_elements(array):
    """Elements of ``array``'s dtype per cache line (at least 1), as a compile-time constant in
    numba code. ``array.itemsize`` there is a run-time field: a step computed from it costs a
    division per call and a loop LLVM cannot unroll, which took about 0.7 ms of a batch's 3.3 ms
    gather on the benchmark graph."""
    return max(1, CACHE_LINE_BYTES // array.itemsize)


@overload(line_elements, inline="always")
def _line_elements(array):
    step = max(1, CACHE_LINE_BYTES // as_dtype(array.dtype).itemsize)
    return lambda array: step


@numba.njit(inline="always", nogil=True)
def prefetch_row(rows, r):
    """Prefetch every cache line of row ``r`` of a C-contiguous 2-D array."""
    width = rows.shape[1]
    for offset in range(0, width, line_elements(rows)):
        prefetch(rows, r * width + offset)
