"""Mutations of an ONNX model for the fuzzer. Each mutator takes a Case (the ModelProto, side files
written next to it, a random.Random) and changes it in place; it returns a one-line description
of what it did, or None when the model offers it nothing to change. Byte mutators work on the
serialized file and therefore run last."""
import math

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

INTS = [0, 1, -1, 2, 3, -2, 5, 7, 64, 1000, 2**31 - 1, 2**31, -2**31, 2**40, 2**62, -2**63, 2**63 - 1]
SMALL_INTS = [0, 1, 2, 3, -1, -2, -5, 4, 9, 100, 2**31, -2**40]
FLOATS = [0.0, -1.0, 1e-30, 1e30, math.nan, math.inf, -math.inf, 0.5, 65504.0, -0.0, 3.0]
STRINGS = ["", "bogus", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "nearest", "linear", "cubic", "half_pixel",
           "asymmetric", "align_corners", "round_prefer_floor", "floor", "ceil", "tf_crop_and_resize",
           "\x1b[31mred\x1b[0m", "x" * 300, "constant", "reflect", "edge"]
NAMES = ["", " ", "a=b", "\x1b[2J\x1b[H", "\u00fc/..", "../../etc/passwd", ".", "x" * 3000, "a\nb", "-x", "%s%n"]
DTYPES = [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT64, TensorProto.INT32,
          TensorProto.INT8, TensorProto.UINT8, TensorProto.BOOL, TensorProto.STRING, TensorProto.COMPLEX64,
          TensorProto.UINT64, 0, 99]
OPS = ["Relu", "Sigmoid", "Identity", "Conv", "MaxPool", "Softmax", "If", "Loop", "NonZero", "FooBar", "relu",
       "Gemm", "Concat", "Reshape", "Expand", "TopK", "Resize", "Split", "LayerNormalization", "Einsum", ""]
# Attributes a node of an op may take, for setting or adding them with hostile values.
OP_ATTRS = {
    "Conv": ["group", "dilations", "strides", "pads", "kernel_shape", "auto_pad"],
    "MaxPool": ["kernel_shape", "strides", "pads", "dilations", "ceil_mode", "auto_pad", "storage_order"],
    "AveragePool": ["kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad", "auto_pad"],
    "Gemm": ["transA", "transB", "alpha", "beta"], "Softmax": ["axis"], "Concat": ["axis"], "Split": ["axis"],
    "Gather": ["axis"], "Flatten": ["axis"], "Transpose": ["perm"], "Reshape": ["allowzero"],
    "Resize": ["mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
               "extrapolation_value"],
    "BatchNormalization": ["epsilon", "momentum", "training_mode"], "ReduceMean": ["axes", "keepdims"],
    "LayerNormalization": ["axis", "epsilon", "stash_type"], "Pad": ["mode"], "Relu": ["alpha"],
}
LIST_ATTRS = {"dilations", "strides", "pads", "kernel_shape", "perm", "axes"}
FLOAT_ATTRS = {"alpha", "beta", "epsilon", "momentum", "cubic_coeff_a", "extrapolation_value"}
STRING_ATTRS = {"auto_pad", "mode", "coordinate_transformation_mode", "nearest_mode"}


class Case:
    def __init__(self, model, rng):
        self.model, self.rng, self.files, self.data = model, rng, {}, None

    @property
    def g(self):
        return self.model.graph


def _pick(rng, seq):
    seq = list(seq)
    return rng.choice(seq) if seq else None


def _set_attr(node, name, value):
    keep = [a for a in node.attribute if a.name != name]
    del node.attribute[:]
    node.attribute.extend(keep + [helper.make_attribute(name, value)])


def _hostile(rng, name, length):
    """A value for attribute `name`; lists keep their length (`length`) half of the time, with
    plausible values, so that the model often stays valid and reaches lowering and code generation."""
    if name in LIST_ATTRS:
        if rng.random() < 0.5:
            return [rng.choice([0, 1, 1, 2, 2, 3]) for _ in range(length)]
        return [rng.choice(SMALL_INTS) for _ in range(rng.randint(0, 5))]
    if name in FLOAT_ATTRS:
        return rng.choice(FLOATS)
    if name in STRING_ATTRS:
        return rng.choice(STRINGS)
    return rng.choice(INTS)


def _names(case):
    g = case.g
    out = {v.name for v in list(g.input) + list(g.output)} | {t.name for t in g.initializer}
    for n in g.node:
        out |= set(n.input) | set(n.output)
    return sorted(x for x in out if x)


def _rename(case, old, new):
    g = case.g
    for n in g.node:
        n.input[:] = [new if x == old else x for x in n.input]
        n.output[:] = [new if x == old else x for x in n.output]
    for v in list(g.input) + list(g.output) + list(g.value_info) + list(g.initializer):
        if v.name == old:
            v.name = new


def _loosen(case):
    """Usually forgets the declared output shapes, so that shape inference (not a contradiction with
    the seed's declaration) decides whether the mutated model is valid."""
    if case.rng.random() < 0.7:
        for v in list(case.g.output) + list(case.g.value_info):
            v.type.tensor_type.ClearField("shape")


# --- attributes -------------------------------------------------------------------------------

def attr_value(case):
    """An op's attribute (present or not) set to a hostile value of its own type."""
    nodes = [n for n in case.g.node if n.op_type in OP_ATTRS]
    n = _pick(case.rng, nodes)
    if n is None:
        return None
    name = case.rng.choice(OP_ATTRS[n.op_type])
    old = [a for a in n.attribute if a.name == name]
    v = _hostile(case.rng, name, len(old[0].ints) if old and old[0].ints else (4 if name == "pads" else 2))
    _set_attr(n, name, v)
    _loosen(case)
    return f"{n.op_type} {name}={v!r}"


def attr_wrong_type(case):
    """An attribute replaced by one of another type (float for int, int for list, ...)."""
    attrs = [(n, a) for n in case.g.node for a in n.attribute]
    if not attrs:
        return None
    n, a = case.rng.choice(attrs)
    v = case.rng.choice([1.5, 2, [1, 2], [0.5], "3", b"\xff\xfe", numpy_helper.from_array(np.array([1], np.int64))])
    _set_attr(n, a.name, v)
    return f"{n.op_type} {a.name} as {type(v).__name__} {str(v)[:40]!r}"


def attr_list_length(case):
    """An ints attribute one element short, one too long, or empty."""
    attrs = [(n, a) for n in case.g.node for a in n.attribute if a.type == AttributeProto.INTS]
    if not attrs:
        return None
    n, a = case.rng.choice(attrs)
    v = list(a.ints)
    v = case.rng.choice([v[:-1], v + v[-1:], [], v * 2])
    _set_attr(n, a.name, v)
    _loosen(case)
    return f"{n.op_type} {a.name}={v}"


def attr_extra_or_removed(case):
    """An unknown attribute added, or an existing one removed."""
    n = _pick(case.rng, case.g.node)
    if n is None:
        return None
    if n.attribute and case.rng.random() < 0.5:
        a = case.rng.choice(list(n.attribute))
        n.attribute.remove(a)
        return f"{n.op_type} attribute {a.name} removed"
    name = case.rng.choice(["fuzz_extra", "axis", "group", "\x07", ""])
    _set_attr(n, name, case.rng.choice([1, 0.5, "s", [3, 3]]))
    return f"{n.op_type} extra attribute {name!r}"


def attr_float_special(case):
    """A float attribute set to NaN, Inf, 0 or huge."""
    attrs = [(n, a) for n in case.g.node for a in n.attribute if a.type == AttributeProto.FLOAT]
    if not attrs:
        return None
    n, a = case.rng.choice(attrs)
    v = case.rng.choice(FLOATS)
    _set_attr(n, a.name, v)
    return f"{n.op_type} {a.name}={v}"


def attr_graph(case):
    """A GRAPH attribute (a subgraph) attached to a node."""
    n = _pick(case.rng, case.g.node)
    if n is None:
        return None
    sub = helper.make_graph([], "sub", [], [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1])])
    n.attribute.extend([helper.make_attribute(case.rng.choice(["then_branch", "body", "g"]), sub)])
    return f"{n.op_type} gets a graph attribute"


# --- shapes -----------------------------------------------------------------------------------

def _shaped(case):
    g = case.g
    return [v for v in list(g.input) + list(g.output) + list(g.value_info) if v.type.HasField("tensor_type")]


def shape_dim(case):
    """One dimension of an input or output set to 0, negative, huge or symbolic."""
    vs = [v for v in _shaped(case) if len(v.type.tensor_type.shape.dim)]
    v = _pick(case.rng, vs)
    if v is None:
        return None
    dims = v.type.tensor_type.shape.dim
    d = dims[case.rng.randrange(len(dims))]
    choice = case.rng.choice([0, -1, 2**31, 2**40, 2**62, 1, 3, 16, 1000, "N", "", "\x1b"])
    if isinstance(choice, str):
        d.ClearField("dim_value")
        d.dim_param = choice
    else:
        d.ClearField("dim_param")
        d.dim_value = choice
    _loosen(case)
    return f"{v.name!r} dim -> {choice!r}"


def shape_rank(case):
    """An input or output gains or loses dimensions, or loses its shape."""
    v = _pick(case.rng, _shaped(case))
    if v is None:
        return None
    tt = v.type.tensor_type
    dims = [d.dim_value for d in tt.shape.dim]
    op = case.rng.choice(["add", "drop", "scalar", "unknown"])
    if op == "unknown":
        tt.ClearField("shape")
        return f"{v.name!r} shape removed"
    dims = {"add": dims + [1], "drop": dims[1:], "scalar": []}[op]
    tt.ClearField("shape")
    tt.shape.SetInParent()
    for x in dims:
        tt.shape.dim.add().dim_value = x
    return f"{v.name!r} shape -> {dims}"


def init_dims(case):
    """An initializer's dims changed without changing its data."""
    t = _pick(case.rng, case.g.initializer)
    if t is None:
        return None
    dims = list(t.dims)
    dims = case.rng.choice([dims[::-1], dims + [1], dims[1:], [0] + dims, [-1] + dims[1:], [2**40] + dims[1:]])
    t.dims[:] = dims
    return f"initializer {t.name!r} dims -> {dims}"


# --- dtypes -----------------------------------------------------------------------------------

def dtype_value(case):
    """The elem_type of an input, output or initializer changed."""
    choices = [v for v in _shaped(case)] + list(case.g.initializer)
    v = _pick(case.rng, choices)
    if v is None:
        return None
    dt = case.rng.choice(DTYPES)
    if isinstance(v, TensorProto):
        v.data_type = dt
    else:
        v.type.tensor_type.elem_type = dt
    return f"{v.name!r} dtype -> {dt}"


def dtype_all(case):
    """Every input and output of a model changed to one other type (valid for initializer-free graphs)."""
    dt = case.rng.choice([TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT16,
                          TensorProto.INT8, TensorProto.UINT8])
    for v in _shaped(case):
        v.type.tensor_type.elem_type = dt
    return f"all inputs and outputs dtype -> {dt}"


# --- names ------------------------------------------------------------------------------------

def name_weird(case):
    """A tensor renamed everywhere to an odd name (empty, '=', control characters, a path, another name)."""
    names = _names(case)
    if not names:
        return None
    old = case.rng.choice(names)
    new = case.rng.choice(NAMES + names)
    _rename(case, old, new)
    return f"tensor {old!r} renamed {new[:40]!r}"


def name_dangling(case):
    """A node input renamed to a tensor nothing produces, or emptied."""
    nodes = [n for n in case.g.node if n.input]
    n = _pick(case.rng, nodes)
    if n is None:
        return None
    i = case.rng.randrange(len(n.input))
    n.input[i] = case.rng.choice(["missing_tensor", ""])
    return f"{n.op_type} input {i} -> {n.input[i]!r}"


def name_collision(case):
    """A node output renamed to a graph input, an initializer or another node's output."""
    n = _pick(case.rng, case.g.node)
    if n is None or not n.output:
        return None
    others = [v.name for v in case.g.input] + [t.name for t in case.g.initializer] + \
             [o for m in case.g.node if m is not n for o in m.output]
    if not others:
        return None
    new = case.rng.choice(others)
    n.output[0] = new
    return f"{n.op_type} output 0 -> {new!r} (already defined)"


def name_node(case):
    """Node names made empty, duplicated or full of control characters."""
    for n in case.g.node:
        n.name = case.rng.choice(NAMES + ["dup"])
    return "node names mangled"


# --- structure --------------------------------------------------------------------------------

def struct_node(case):
    """A node removed, duplicated, moved, or its inputs swapped / one added or dropped."""
    nodes = case.g.node
    if not nodes:
        return None
    i = case.rng.randrange(len(nodes))
    n = nodes[i]
    op = case.rng.choice(["remove", "duplicate", "reverse", "swap", "extra_input", "drop_input", "drop_output"])
    if op == "remove":
        del nodes[i]
    elif op == "duplicate":
        nodes.add().CopyFrom(n)
    elif op == "reverse":
        order = list(nodes)[::-1]
        del nodes[:]
        nodes.extend(order)
    elif op == "swap" and len(n.input) >= 2:
        n.input[0], n.input[1] = n.input[1], n.input[0]
    elif op == "extra_input":
        n.input.append(case.rng.choice(_names(case) + [""]))
    elif op == "drop_input" and n.input:
        del n.input[-1]
    elif op == "drop_output" and n.output:
        del n.output[-1]
    else:
        return None
    return f"{n.op_type} node #{i}: {op}"


def struct_cycle(case):
    """A node reads its own output or a later node's output."""
    nodes = case.g.node
    cands = [(i, n) for i, n in enumerate(nodes) if n.input]
    if not cands:
        return None
    i, n = case.rng.choice(cands)
    later = [o for m in list(nodes)[i:] for o in m.output]
    n.input[0] = case.rng.choice(later)
    return f"{n.op_type} node #{i} input 0 -> {n.input[0]!r} (cycle)"


def struct_graph_io(case):
    """Graph outputs that nothing produces, no outputs, an input removed, duplicated or unused."""
    g = case.g
    op = case.rng.choice(["ghost_output", "no_outputs", "drop_input", "dup_input", "unused_input", "dup_output"])
    if op == "ghost_output":
        g.output.extend([helper.make_tensor_value_info("ghost", TensorProto.FLOAT, [1])])
    elif op == "no_outputs":
        del g.output[:]
    elif op == "drop_input" and g.input:
        del g.input[0]
    elif op == "dup_input" and g.input:
        g.input.add().CopyFrom(g.input[0])
    elif op == "unused_input":
        g.input.extend([helper.make_tensor_value_info("unused", TensorProto.FLOAT, [2, 3])])
    elif op == "dup_output" and g.output:
        g.output.add().CopyFrom(g.output[0])
    else:
        return None
    return f"graph io: {op}"


def struct_op(case):
    """A node's op type or domain changed."""
    n = _pick(case.rng, case.g.node)
    if n is None:
        return None
    if case.rng.random() < 0.75:
        n.op_type = case.rng.choice(OPS)
        return f"node {n.name!r} op -> {n.op_type!r}"
    n.domain = case.rng.choice(["com.microsoft", "ai.onnx.ml", "bogus", "ai.onnx"])
    return f"{n.op_type} domain -> {n.domain!r}"


def struct_versions(case):
    """The opset import or IR version changed or removed."""
    m = case.model
    op = case.rng.choice(["opset", "opset", "no_opset", "extra_domain", "ir"])
    if op == "opset":
        m.opset_import[0].version = case.rng.choice([0, 1, 6, 7, 11, 12, 18, 19, 21, 99, -1, 2**40])
        return f"opset -> {m.opset_import[0].version}"
    if op == "no_opset":
        del m.opset_import[:]
        return "no opset import"
    if op == "extra_domain":
        m.opset_import.extend([helper.make_opsetid("", 18)])
        return "default domain imported twice"
    m.ir_version = case.rng.choice([0, 1, 3, 4, 10, 99, -5])
    return f"ir_version -> {m.ir_version}"


# --- initializer data -------------------------------------------------------------------------

def _as_raw(t):
    if not t.raw_data:
        arr = numpy_helper.to_array(t)
        t.CopyFrom(numpy_helper.from_array(arr, t.name))
    return t


def data_bytes(case):
    """An initializer's raw data truncated, extended, emptied or duplicated into a typed field."""
    t = _pick(case.rng, case.g.initializer)
    if t is None:
        return None
    _as_raw(t)
    raw = t.raw_data
    op = case.rng.choice(["truncate", "extend", "empty", "odd", "typed_too", "typed_short"])
    if op == "truncate":
        t.raw_data = raw[:case.rng.randrange(len(raw))] if raw else b""
    elif op == "extend":
        t.raw_data = raw + b"\x00" * case.rng.choice([1, 4, 8, 4096])
    elif op == "empty":
        t.raw_data = b""
    elif op == "odd":
        t.raw_data = raw[:-1] if raw else b"\x01"
    elif op == "typed_too" and t.data_type == TensorProto.FLOAT:
        t.float_data.extend([1.0])
    elif op == "typed_short":
        arr = numpy_helper.to_array(t).flatten()
        t.ClearField("raw_data")
        field = {TensorProto.FLOAT: t.float_data, TensorProto.INT64: t.int64_data}.get(t.data_type)
        if field is None:
            return None
        field.extend(arr[:-1].tolist())
    else:
        return None
    return f"initializer {t.name!r} data: {op}"


def data_values(case):
    """Initializer values made hostile: NaN/Inf weights, out-of-range indices, odd shapes, split sizes."""
    t = _pick(case.rng, case.g.initializer)
    if t is None:
        return None
    arr = numpy_helper.to_array(t).copy()
    if arr.dtype == np.int64:
        choice = case.rng.choice(["one", "all"])
        if choice == "one" and arr.size:
            arr.flat[case.rng.randrange(arr.size)] = case.rng.choice(INTS + SMALL_INTS)
        else:
            vals = [case.rng.choice(SMALL_INTS + [0, 0, 1, 4, 8]) for _ in range(case.rng.randint(0, 5))]
            arr = np.array(vals, dtype=np.int64)
    elif arr.size:
        k = max(1, arr.size // case.rng.choice([1, 2, 8, 64]))
        for _ in range(k):
            arr.flat[case.rng.randrange(arr.size)] = case.rng.choice(FLOATS)
    else:
        return None
    t.CopyFrom(numpy_helper.from_array(arr.astype(numpy_helper.to_array(t).dtype), t.name))
    _loosen(case)
    return f"initializer {t.name!r} values -> {arr.flatten()[:8].tolist()}"


def data_external(case):
    """An initializer moved to external data: absolute path, '..', missing file, bad offset or length."""
    t = _pick(case.rng, case.g.initializer)
    if t is None:
        return None
    _as_raw(t)
    raw = bytes(t.raw_data)
    case.files["weights.bin"] = b"\x00" * 16 + raw
    loc, off, length = case.rng.choice([
        ("/etc/passwd", 0, len(raw)), ("../x", 0, len(raw)), ("missing.bin", 0, None),
        ("weights.bin", 16, len(raw)), ("weights.bin", 16, len(raw) + 4), ("weights.bin", 2**40, None),
        ("weights.bin", -8, None), ("weights.bin", 17, len(raw)), ("", 0, None), (".", 0, None),
        ("/dev/zero", 0, len(raw)), ("sub/../weights.bin", 16, len(raw)), ("/proc/self/mem", 0, len(raw))])
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=loc)
    t.external_data.add(key="offset", value=str(off))
    if length is not None:
        t.external_data.add(key="length", value=str(length))
    return f"initializer {t.name!r} external: location={loc!r} offset={off} length={length}"


# --- bytes (last) -----------------------------------------------------------------------------

def bytes_mutate(case):
    """The serialized model: bits flipped, truncated, emptied, a range zeroed or duplicated."""
    data = bytearray(case.data)
    op = case.rng.choice(["flip", "flip", "truncate", "truncate", "empty", "zero", "dup", "garbage"])
    if op == "flip":
        for _ in range(case.rng.randint(1, 8)):
            p = case.rng.randrange(len(data))
            data[p] ^= 1 << case.rng.randrange(8)
    elif op == "truncate":
        data = data[:case.rng.randrange(len(data))]
    elif op == "empty":
        data = bytearray()
    elif op == "zero":
        p = case.rng.randrange(len(data))
        data[p:p + 16] = b"\x00" * len(data[p:p + 16])
    elif op == "dup":
        p = case.rng.randrange(len(data))
        data[p:p] = data[p:p + 32]
    else:
        data += bytes(case.rng.randrange(256) for _ in range(32))
    case.data = bytes(data)
    return f"bytes: {op} (file now {len(data)} bytes)"


# Categories and their weights; a case draws categories, then one mutator of each.
CATEGORIES = {
    "attributes": (5, [attr_value, attr_value, attr_wrong_type, attr_list_length, attr_extra_or_removed,
                       attr_float_special, attr_graph]),
    "shapes": (3, [shape_dim, shape_dim, shape_rank, init_dims]),
    "dtypes": (2, [dtype_value, dtype_all]),
    "names": (2, [name_weird, name_weird, name_dangling, name_collision, name_node]),
    "structure": (3, [struct_node, struct_cycle, struct_graph_io, struct_op, struct_versions]),
    "data": (4, [data_bytes, data_values, data_values]),
    "external": (1, [data_external]),
    "bytes": (2, [bytes_mutate]),
}
