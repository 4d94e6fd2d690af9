"""Seed models for the fuzzer: small, valid, static-shape ONNX graphs (opset 13, LayerNormalization
17) that tensorsched and ONNX Runtime both run. Most share the input [1, 4, 8, 8] and the same
4->4 3x3 convolution, so their workloads (and the compiled-code cache) are shared between cases.
Weights come from a fixed generator: a seed is the same model in every run."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
X = [1, 4, 8, 8]


def _w(name, shape, scale=0.5):
    rs = np.random.RandomState(sum(map(ord, name)))
    return numpy_helper.from_array((rs.uniform(-scale, scale, shape)).astype(np.float32), name)


def _i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _f32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def _vi(name, shape, dtype=F):
    return helper.make_tensor_value_info(name, dtype, shape)


def _model(name, nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tensorsched-fuzz")
    m.ir_version = 8
    return m


def _conv(x="x", y="c", bias=True):
    ins = [x, "w", "b"] if bias else [x, "w"]
    return helper.make_node("Conv", ins, [y], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])


def _conv_inits(bias=True):
    inits = [_w("w", [4, 4, 3, 3])]
    return inits + [_w("b", [4], 0.1)] if bias else inits


def conv_relu_maxpool():
    nodes = [_conv(), helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2])]
    return _model("conv_relu_maxpool", nodes, [_vi("x", X)], [_vi("y", [1, 4, 4, 4])], _conv_inits())


def conv_bn():
    nodes = [_conv(),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["y"], name="bn", epsilon=1e-5)]
    inits = _conv_inits() + [_w("s", [4]), _w("bb", [4]), _w("m", [4], 0.1),
                             _f32("v", [0.5, 1.0, 1.5, 2.0])]
    return _model("conv_bn", nodes, [_vi("x", X)], [_vi("y", X)], inits)


def gemm():
    nodes = [helper.make_node("Gemm", ["x", "gw", "gc"], ["y"], name="gemm", transB=1, alpha=0.5, beta=2.0)]
    return _model("gemm", nodes, [_vi("x", [2, 16])], [_vi("y", [2, 8])], [_w("gw", [8, 16]), _w("gc", [8])])


def matmul_softmax():
    nodes = [helper.make_node("MatMul", ["x", "mw"], ["mm"], name="matmul"),
             helper.make_node("Softmax", ["mm"], ["y"], name="softmax", axis=-1)]
    return _model("matmul_softmax", nodes, [_vi("x", [2, 16])], [_vi("y", [2, 8])], [_w("mw", [16, 8])])


def concat():
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sigmoid"),
             helper.make_node("Concat", ["x", "s", "k"], ["y"], name="concat", axis=1)]
    return _model("concat", nodes, [_vi("x", X)], [_vi("y", [1, 10, 8, 8])], [_w("k", [1, 2, 8, 8])])


def split():
    nodes = [helper.make_node("Split", ["x", "sp"], ["a", "b"], name="split", axis=1),
             helper.make_node("Relu", ["a"], ["y0"], name="relu"),
             helper.make_node("Neg", ["b"], ["y1"], name="neg")]
    outputs = [_vi("y0", [1, 1, 8, 8]), _vi("y1", [1, 3, 8, 8])]
    return _model("split", nodes, [_vi("x", X)], outputs, [_i64("sp", [1, 3])])


def gather():
    nodes = [helper.make_node("Gather", ["x", "idx"], ["y"], name="gather", axis=1)]
    return _model("gather", nodes, [_vi("x", X)], [_vi("y", [1, 3, 8, 8])], [_i64("idx", [3, 0, 2])])


def reshape_transpose_flatten():
    nodes = [helper.make_node("Reshape", ["x", "shp"], ["r"], name="reshape"),
             helper.make_node("Transpose", ["r"], ["t"], name="transpose", perm=[0, 2, 1]),
             helper.make_node("Flatten", ["t"], ["y"], name="flatten", axis=1)]
    return _model("reshape_transpose_flatten", nodes, [_vi("x", X)], [_vi("y", [1, 256])], [_i64("shp", [1, 4, 64])])


def resize():
    nodes = [helper.make_node("Resize", ["x", "", "sc"], ["y"], name="resize", mode="nearest")]
    return _model("resize", nodes, [_vi("x", X)], [_vi("y", [1, 4, 16, 16])], [_f32("sc", [1, 1, 2, 2])])


def add_mul_chain():
    nodes = [helper.make_node("Add", ["x", "ka"], ["a"], name="add"),
             helper.make_node("Mul", ["a", "km"], ["m"], name="mul"),
             helper.make_node("Sub", ["m", "x"], ["s"], name="sub"),
             helper.make_node("Div", ["s", "kd"], ["y"], name="div")]
    inits = [_w("ka", [4, 1, 1]), _w("km", [1, 4, 8, 8]), _f32("kd", [2.0])]
    return _model("add_mul_chain", nodes, [_vi("x", X)], [_vi("y", X)], inits)


def global_avg_pool():
    nodes = [_conv(), helper.make_node("GlobalAveragePool", ["c"], ["y"], name="gap")]
    return _model("global_avg_pool", nodes, [_vi("x", X)], [_vi("y", [1, 4, 1, 1])], _conv_inits())


def clip_sigmoid():
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["c"], name="clip"),
             helper.make_node("Sigmoid", ["c"], ["y"], name="sigmoid")]
    return _model("clip_sigmoid", nodes, [_vi("x", X)], [_vi("y", X)], [_f32("lo", -0.5), _f32("hi", 0.25)])


def avg_pool():
    nodes = [helper.make_node("AveragePool", ["x"], ["y"], name="avgpool", kernel_shape=[3, 3], strides=[1, 1],
                              pads=[1, 1, 1, 1], count_include_pad=0)]
    return _model("avg_pool", nodes, [_vi("x", X)], [_vi("y", X)])


def reduce_mean():
    nodes = [helper.make_node("ReduceMean", ["x"], ["y"], name="reducemean", axes=[2, 3], keepdims=1)]
    return _model("reduce_mean", nodes, [_vi("x", X)], [_vi("y", [1, 4, 1, 1])])


def layer_norm():
    nodes = [helper.make_node("LayerNormalization", ["x", "ls", "lb"], ["y"], name="layernorm", axis=-1, epsilon=1e-5)]
    return _model("layer_norm", nodes, [_vi("x", [2, 8, 16])], [_vi("y", [2, 8, 16])],
                  [_w("ls", [16]), _w("lb", [16])], opset=17)


def two_inputs():
    """No initializers: changing every dtype together keeps it valid."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add"),
             helper.make_node("Mul", ["s", "a"], ["m"], name="mul"),
             helper.make_node("Max", ["m", "b"], ["y"], name="max")]
    return _model("two_inputs", nodes, [_vi("a", X), _vi("b", X)], [_vi("y", X)])


def pad_slice():
    nodes = [helper.make_node("Pad", ["x", "pp"], ["p"], name="pad", mode="constant"),
             helper.make_node("Slice", ["p", "st", "en", "ax", "stp"], ["y"], name="slice")]
    inits = [_i64("pp", [0, 0, 1, 1, 0, 0, 1, 1]), _i64("st", [1, 1]), _i64("en", [9, 9]), _i64("ax", [2, 3]),
             _i64("stp", [2, 2])]
    return _model("pad_slice", nodes, [_vi("x", X)], [_vi("y", [1, 4, 4, 4])], inits)


SEEDS = [conv_relu_maxpool, conv_bn, gemm, matmul_softmax, concat, split, gather, reshape_transpose_flatten,
         resize, add_mul_chain, global_avg_pool, clip_sigmoid, avg_pool, reduce_mean, layer_norm, two_inputs,
         pad_slice]
