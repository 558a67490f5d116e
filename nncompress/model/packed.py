"""The kernels' view of the packed state: `unpack(packed)` -> `state.State`, inside numba.

The packed form (four flat buffers and a layout table, see `state.pack`) crosses from Python into
numba cheaply; `unpack` re-slices it into named views (no copies).  Its body is generated from
`state.FIELDS`, so the declaration stays the only list of fields: one `_view1`/`_view2` call per
field, in declaration order.

The views are borrowed: built in place by `_borrow`, they carry no reference (meminfo NULL).
Borrowing is safe because the state only lives inside a kernel call, and the call's `packed`
argument keeps the buffers alive.  The kernels are also compiled without reference counting
(jit.OPTIONS, `_nrt=False`): even on borrowed views numba called the runtime once per array for
every state tuple passed to or received by a kernel (~100 arrays), which cost more than the
model itself.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

from . import state
from .jit import kernel


@intrinsic
def _borrow(typingctx, buf, start, shape):
    """A C-contiguous view of buf[start:] with the given shape, owning no reference (meminfo NULL),
    built in place: no call, and nothing for the reference counting to do."""
    ndim = len(shape)
    result = types.Array(buf.dtype, ndim, "C")

    def codegen(context, builder, signature, args):
        source = context.make_array(signature.args[0])(context, builder, args[0])
        data = builder.gep(source.data, [args[1]])
        shapes = cgutils.unpack_tuple(builder, args[2], ndim)
        itemsize = context.get_constant(types.intp,
                                        context.get_abi_sizeof(context.get_data_type(buf.dtype)))
        strides, stride = [], itemsize
        for extent in reversed(shapes):
            strides.insert(0, stride)
            stride = builder.mul(stride, extent)
        view = context.make_array(result)(context, builder)
        populate_array(view, data=data, shape=shapes, strides=strides, itemsize=itemsize,
                       meminfo=None)
        return view._getvalue()
    return result(buf, start, shape), codegen


@kernel(inline=True)
def _view1(buf, layout, k):
    return _borrow(buf, layout[k, 0], (layout[k, 1],))


@kernel(inline=True)
def _view2(buf, layout, k):
    return _borrow(buf, layout[k, 0], (layout[k, 1], layout[k, 2]))


@kernel(inline=True)
def _view3(buf, layout, k):
    return _borrow(buf, layout[k, 0], (layout[k, 1], layout[k, 2], layout[k, 3]))


_BUFFER_NAMES = {"uint8": "u8", "int32": "i32", "int64": "i64", "float64": "f64", "float32": "f32"}


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
                     _view2=_view2, _view3=_view3)
    exec(compile(source, "<nncompress.model.packed: generated from state.FIELDS>", "exec"),
         namespace)
    return source, namespace["unpack"]


UNPACK_SOURCE, _unpack = _generate_unpack()
unpack = kernel(_unpack, inline=True, cache=False)
unpack.__doc__ = "The named state (state.State) as views into the packed buffers."
