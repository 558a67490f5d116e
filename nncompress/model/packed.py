"""The kernels' view of the packed state: `unpack(packed)` -> `state.State`, inside numba.

The packed form (four flat buffers and a layout table, see `state.pack`) crosses from Python into
numba cheaply; `unpack` re-slices it into named views (no copies).  Its body is generated from
`state.FIELDS`, so the declaration stays the only list of fields: one `_view1`/`_view2` call per
field, in declaration order.

The views are borrowed: built from the buffers' addresses, they carry no reference count.  A
numba array view normally holds a counted reference to its buffer, and passing the state tuple
to a helper (or inlining one) counts every one of its ~45 arrays up and down again with atomic
operations; per tree node that cost more than the model itself.  Borrowing is safe because the
state only lives inside a kernel call, and the call's `packed` argument keeps the buffers alive.
"""

from __future__ import annotations

import numba
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from . import state
from .jit import kernel


@intrinsic
def _address(typingctx, address):
    """An integer address as a void pointer (what numba.carray takes)."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(address), codegen


@kernel(inline=True)
def _view1(buf, layout, k):
    start = buf.ctypes.data + layout[k, 0] * buf.itemsize
    return numba.carray(_address(start), (layout[k, 1],), buf.dtype)


@kernel(inline=True)
def _view2(buf, layout, k):
    start = buf.ctypes.data + layout[k, 0] * buf.itemsize
    return numba.carray(_address(start), (layout[k, 1], layout[k, 2]), buf.dtype)


_BUFFER_NAMES = {"uint8": "u8", "int32": "i32", "int64": "i64", "float64": "f64"}


def _field_view(field) -> str:
    k = state.FIELD_INDEX[field.name]
    return f"_view{field.ndim}({_BUFFER_NAMES[field.dtype]}, layout, {k})"


def _generate_unpack():
    node = ", ".join(_field_view(f) for f in state.NODE_FIELDS)
    model = ",\n        ".join(_field_view(f) for f in state.MODEL_FIELDS)
    source = (
        "def unpack(packed):\n"
        f"    {', '.join(_BUFFER_NAMES[d] for d in state.DTYPE_GROUPS)}, layout = packed\n"
        "    return State(\n"
        f"        {model},\n"
        f"        Node({node}))\n"
    )
    namespace = dict(__name__=__name__, State=state.State, Node=state.Node, _view1=_view1,
                     _view2=_view2)
    exec(compile(source, "<nncompress.model.packed: generated from state.FIELDS>", "exec"),
         namespace)
    return source, namespace["unpack"]


UNPACK_SOURCE, _unpack = _generate_unpack()
unpack = kernel(_unpack, inline=True, cache=False)
unpack.__doc__ = "The named state (state.State) as views into the packed buffers."
