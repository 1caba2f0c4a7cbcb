"""A software prefetch of a table row, for compiled loops that read sampled rows at random.

A Poisson batch reads about 1,000 rows spread over the whole data set (Adult's padded sparse
rows are 2.6 MB, more than this machine's 2 MB of L2 per core), so each row read in a loop over
the batch waits on memory. The loops know the next rows in advance (the batch index), and
asking for row ``rows[b + ROWS_AHEAD]`` while working on ``rows[b]`` hides most of that wait
(timings: BENCHMARKS.md). A prefetch is only a hint: it reads no
value and changes no result.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: How many rows ahead of the current one the sparse-row loops prefetch (8 and 16 were
#: as fast; 8 wastes less at the end of a short batch).
ROWS_AHEAD = 8


@intrinsic
def prefetch_row(typingctx, table, i):  # pragma: no cover - compiled
    """Ask the CPU to bring row ``table[i]`` in (read, keep in all cache levels): the cache
    lines of its first and last entries, so a row that straddles two lines comes in whole
    (Adult's values rows are 52 bytes; faster than the first line only, BENCHMARKS.md). For a
    2-D C-contiguous array and an integer row; compiles to LLVM's ``llvm.prefetch``."""
    if not (isinstance(table, types.Array) and table.ndim == 2 and table.layout == "C"
            and isinstance(i, types.Integer)):
        return None
    signature = types.void(table, i)

    def codegen(context, builder, sig, args):
        table_type, row_type = sig.args
        array = context.make_array(table_type)(context, builder, args[0])
        row = context.cast(builder, args[1], row_type, types.intp)
        width = cgutils.unpack_tuple(builder, array.shape, 2)[1]
        first = context.get_constant(types.intp, 0)
        last = builder.sub(width, context.get_constant(types.intp, 1))
        byte_pointer = ir.IntType(8).as_pointer()
        flag = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, flag, flag, flag]),
            "llvm.prefetch.p0i8")
        for column in (first, last):
            pointer = cgutils.get_item_pointer(context, builder, table_type, array,
                                               [row, column], wraparound=False)
            # read (0), highest locality (3), data cache (1)
            builder.call(function, [builder.bitcast(pointer, byte_pointer), flag(0), flag(3),
                                    flag(1)])
        return context.get_dummy_value()

    return signature, codegen
