"""A software prefetch hint for the kernels (LLVM's `llvm.prefetch`).

The hashed tables are far larger than the caches, so each context's slot look-up is a cache miss.
Looked up one after another, with a branch on each loaded check byte, those misses mostly wait
in turn; asking for every context's bucket first lets them overlap.  A prefetch changes no value
anywhere, so the model's arithmetic, and every archive, stays bit-identical.

Called from plain Python (NUMBA_DISABLE_JIT=1) it does nothing.  numba has no prefetch of its
own, hence the small intrinsic.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload


def prefetch(array, index):
    """Hint that array[index] (a 1-D array) will be read soon; no effect on any value."""


@intrinsic
def _prefetch(typingctx, array, index):
    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        address = cgutils.get_item_pointer(context, builder, array_type, view, [args[1]],
                                           wraparound=False, boundscheck=False)
        i8_pointer, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        hint_type = ir.FunctionType(ir.VoidType(), [i8_pointer, i32, i32, i32])
        hint = cgutils.get_or_insert_function(builder.module, hint_type, "llvm.prefetch.p0")
        # read (0), keep in all cache levels (3), data cache (1)
        builder.call(hint, [builder.bitcast(address, i8_pointer), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(array, index), codegen


@overload(prefetch, inline="always")
def _prefetch_overload(array, index):
    def implementation(array, index):
        _prefetch(array, index)
    return implementation
