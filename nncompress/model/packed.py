"""The kernels' view of the packed state: `unpack(packed)` -> `state.State`, inside numba.

The packed form (four flat buffers and a layout table, see `state.pack`) crosses from Python into
numba cheaply; `unpack` re-slices it into named views (no copies).  Its body is generated from
`state.FIELDS`, so the declaration stays the only list of fields: one `_view1`/`_view2` call per
field, in declaration order.  Built inside a compiled caller, the named tuple costs what
positional unpacking costs (LLVM sees the same views).
"""

from __future__ import annotations

from . import state
from .jit import kernel


@kernel(inline=True)
def _view1(buf, layout, k):
    return buf[layout[k, 0] : layout[k, 0] + layout[k, 1]]


@kernel(inline=True)
def _view2(buf, layout, k):
    start = layout[k, 0]
    return buf[start : start + layout[k, 1] * layout[k, 2]].reshape((layout[k, 1], layout[k, 2]))


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
    namespace = dict(State=state.State, Node=state.Node, _view1=_view1, _view2=_view2)
    exec(compile(source, "<nncompress.model.packed: generated from state.FIELDS>", "exec"),
         namespace)
    return source, namespace["unpack"]


UNPACK_SOURCE, _unpack = _generate_unpack()
unpack = kernel(_unpack, inline=True, cache=False)
unpack.__doc__ = "The named state (state.State) as views into the packed buffers."
