#!/usr/bin/python3
"""Export benchmark networks to ONNX for tensorsched.

For every model this writes
  <out>/<name>/model.onnx                      full model (random weights), opset 13, static shapes
  <out>/<name>/test_data_set_0/input_0.pb      a random input (ONNX TensorProto)
  <out>/<name>/test_data_set_0/output_0.pb     PyTorch's output for that input
  <graph-only-dir>/<name>.onnx                 the same graph without weight data: every weight
                                               is a graph input (name, dtype, shape) and the
                                               metadata entry "tensorsched.weights" lists them

Weights are random (no pretrained weights are downloaded): torch.manual_seed(seed) before the
network is built, and every BatchNorm gets random running statistics and affine parameters so
that nothing folds trivially (the statistics are then scaled to the activations they see, see
calibrate_batchnorm; --no-calibrate keeps them as drawn).  Run with Debian's python:

  /usr/bin/python3 tools/export_models.py [--out models/full] [--graph-only-dir models]
                                          [--models resnet18,mobilenet_v2,...] [--seed 0]
"""
import argparse
import math
import os
import subprocess
import sys
import time
import warnings
from collections import Counter

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPSET = 13
GRAPH_ONLY_LIMIT = 200 * 1024          # bytes; graph-only files must stay below this
SMALL_INT_LIMIT = 16                   # integer initializers up to this many elements are kept
BIG_CONSTANT_LIMIT = 16                # float Constant nodes above this many elements become weights
WEIGHTS_KEY = "tensorsched.weights"

INT_TYPES = {TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
             TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64,
             TensorProto.BOOL}

# Used when ./build/tensorsched is not there to ask (`tensorsched ops`).
FALLBACK_SUPPORTED_OPS = set("""
Abs Add And ArgMax ArgMin AveragePool BatchNormalization Cast Ceil Celu Clip Concat Conv
ConvTranspose DepthToSpace Div Dropout Elu Equal Erf Exp Expand Flatten Floor Gather
GatherElements Gemm GlobalAveragePool GlobalLpPool GlobalMaxPool Greater GreaterOrEqual
HardSigmoid HardSwish Hardmax Identity InstanceNormalization LayerNormalization LeakyRelu Less
LessOrEqual Log LogSoftmax LpPool MatMul Max MaxPool Mean Min Mul Neg Not Or PRelu Pad Pow
Reciprocal ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceMax ReduceMean ReduceMin
ReduceProd ReduceSum ReduceSumSquare Relu Reshape Resize Round Selu Sigmoid Sign Slice Softmax
Softplus Softsign SpaceToDepth Split Sqrt Squeeze Sub Sum Tanh ThresholdedRelu Tile Transpose
Unsqueeze Upsample Where Xor
""".split())
# Known, harmless torch.onnx warnings (wavenet's F.pad builds its pads with a step -1 Slice that
# torch cannot fold; tensorsched's importer folds that chain).
for _msg in (r"Constant folding - Only steps=1", r"The shape inference of prim::Constant type is missing"):
    warnings.filterwarnings("ignore", message=_msg, category=UserWarning)

FOLDED_OPS = {"Constant", "Shape", "Size", "ConstantOfShape"}   # folded at import time
import warnings


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------

class GatedResidualBlock(nn.Module):
    """WaveNet block: causal dilated conv pair (filter, gate), tanh * sigmoid, 1x1 residual and skip."""

    def __init__(self, channels, dilation):
        super().__init__()
        self.dilation = dilation
        self.filter = nn.Conv1d(channels, channels, kernel_size=3, dilation=dilation)
        self.gate = nn.Conv1d(channels, channels, kernel_size=3, dilation=dilation)
        self.res = nn.Conv1d(channels, channels, kernel_size=1)
        self.skip = nn.Conv1d(channels, channels, kernel_size=1)

    def forward(self, x):
        p = F.pad(x, (2 * self.dilation, 0))          # causal: pad on the left only
        out = torch.tanh(self.filter(p)) * torch.sigmoid(self.gate(p))
        return x + self.res(out), self.skip(out)


class WaveNet(nn.Module):
    def __init__(self, channels=64, out_channels=256, layers=10):
        super().__init__()
        self.input = nn.Conv1d(1, channels, kernel_size=1)
        self.blocks = nn.ModuleList([GatedResidualBlock(channels, 2 ** i) for i in range(layers)])
        self.post1 = nn.Conv1d(channels, channels, kernel_size=1)
        self.post2 = nn.Conv1d(channels, out_channels, kernel_size=1)

    def forward(self, x):
        x = self.input(x)
        skips = None
        for b in self.blocks:
            x, s = b(x)
            skips = s if skips is None else skips + s
        y = F.relu(skips)
        y = F.relu(self.post1(y))
        return self.post2(y)


def make_transformer():
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                       batch_first=True, dropout=0.0)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    # TransformerEncoder deep-copies one layer, so both layers would start with identical
    # weights (and torch.onnx would share the initializers): give each layer its own, and
    # non-zero attention biases (torch initializes those to 0).
    with torch.no_grad():
        for l in enc.layers:
            l.self_attn._reset_parameters()
            l.self_attn.out_proj.reset_parameters()
            bound = 1.0 / math.sqrt(l.self_attn.embed_dim)
            l.self_attn.in_proj_bias.uniform_(-bound, bound)
            l.self_attn.out_proj.bias.uniform_(-bound, bound)
            l.linear1.reset_parameters()
            l.linear2.reset_parameters()
    return enc


tv = torchvision.models
MODELS = {
    # name: (constructor, input shape)
    "resnet18": (lambda: tv.resnet18(weights=None), (1, 3, 224, 224)),
    "resnet50": (lambda: tv.resnet50(weights=None), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: tv.mobilenet_v2(weights=None), (1, 3, 224, 224)),
    "squeezenet1_0": (lambda: tv.squeezenet1_0(weights=None), (1, 3, 224, 224)),
    "vgg16": (lambda: tv.vgg16(weights=None), (1, 3, 224, 224)),
    "alexnet": (lambda: tv.alexnet(weights=None), (1, 3, 224, 224)),
    "mnasnet1_0": (lambda: tv.mnasnet1_0(weights=None), (1, 3, 224, 224)),
    "efficientnet_b0": (lambda: tv.efficientnet_b0(weights=None), (1, 3, 224, 224)),
    "efficientnet_b4": (lambda: tv.efficientnet_b4(weights=None), (1, 3, 380, 380)),
    "shufflenet_v2_x1_0": (lambda: tv.shufflenet_v2_x1_0(weights=None), (1, 3, 224, 224)),
    "googlenet": (lambda: tv.googlenet(weights=None, aux_logits=False, init_weights=True), (1, 3, 224, 224)),
    "inception_v3": (lambda: tv.inception_v3(weights=None, aux_logits=False, init_weights=True), (1, 3, 299, 299)),
    "r3d_18": (lambda: tv.video.r3d_18(weights=None), (1, 3, 8, 112, 112)),
    "transformer": (make_transformer, (1, 128, 512)),
    "wavenet": (lambda: WaveNet(), (1, 1, 4096)),
}

# Torchvision networks outside the zoo: the default rule is checked on networks nothing was tuned
# or ruled on. Exported on request only (--held-out, or naming them in --models).
HELD_OUT = {
    "resnet34": (lambda: tv.resnet34(weights=None), (1, 3, 224, 224)),
    "resnext50_32x4d": (lambda: tv.resnext50_32x4d(weights=None), (1, 3, 224, 224)),
    "wide_resnet50_2": (lambda: tv.wide_resnet50_2(weights=None), (1, 3, 224, 224)),
    "densenet121": (lambda: tv.densenet121(weights=None), (1, 3, 224, 224)),
    "regnet_y_400mf": (lambda: tv.regnet_y_400mf(weights=None), (1, 3, 224, 224)),
    "regnet_x_1_6gf": (lambda: tv.regnet_x_1_6gf(weights=None), (1, 3, 224, 224)),
    "mobilenet_v3_large": (lambda: tv.mobilenet_v3_large(weights=None), (1, 3, 224, 224)),
    "mobilenet_v3_small": (lambda: tv.mobilenet_v3_small(weights=None), (1, 3, 224, 224)),
    "convnext_tiny": (lambda: tv.convnext_tiny(weights=None), (1, 3, 224, 224)),
    "efficientnet_v2_s": (lambda: tv.efficientnet_v2_s(weights=None), (1, 3, 384, 384)),
    "squeezenet1_1": (lambda: tv.squeezenet1_1(weights=None), (1, 3, 224, 224)),
    "shufflenet_v2_x0_5": (lambda: tv.shufflenet_v2_x0_5(weights=None), (1, 3, 224, 224)),
    "mnasnet0_5": (lambda: tv.mnasnet0_5(weights=None), (1, 3, 224, 224)),
    "vgg11_bn": (lambda: tv.vgg11_bn(weights=None), (1, 3, 224, 224)),
    "vit_b_16": (lambda: tv.vit_b_16(weights=None), (1, 3, 224, 224)),
    "r2plus1d_18": (lambda: tv.video.r2plus1d_18(weights=None), (1, 3, 8, 112, 112)),
    "fcn_resnet50": (lambda: SegmentationOutput(tv.segmentation.fcn_resnet50(weights=None, weights_backbone=None,
                                                                             aux_loss=False)), (1, 3, 224, 224)),
}
ALL_MODELS = {**MODELS, **HELD_OUT}


class SegmentationOutput(nn.Module):
    """Torchvision's segmentation models return a dict; ONNX export wants the tensor."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)["out"]


def randomize_normalization(model):
    """Random running statistics and affine parameters of every BatchNorm, and random affine
    parameters of every LayerNorm (uses the global, seeded generator)."""
    n = 0
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm) and m.elementwise_affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                n += 1
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                if m.running_mean is not None:
                    m.running_mean.normal_(0.0, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
                if m.weight is not None:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.normal_(0.0, 0.1)
                n += 1
    return n


def calibrate_batchnorm(model, x):
    """Makes the random BatchNorm statistics relative to the activations they see.

    In eval mode a BatchNorm normalizes with its running statistics, so with running_mean
    ~ N(0, 0.1) and running_var ~ U(0.5, 1.5) it does not normalize at all: activations grow
    layer after layer (resnet50's logits reach ~300, inception_v3's (trunc-normal std 0.1
    init) ~1e13). Then a float32 reference can only be compared relative to the output's
    scale. So, on one forward pass over a calibration input `x`, each BatchNorm measures
    the per-channel mean mu and std sigma of its own input (earlier BatchNorms are already
    calibrated) and uses running_mean = mu + m0 * sigma and running_var = v0 * sigma^2, where
    m0 and v0 are the random draws made above. The statistics stay random per channel, and the
    activations stay O(1)."""
    bns = [m for m in model.modules()
           if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None]
    if not bns:
        return 0
    done = set()

    def pre_hook(m, inputs):
        if id(m) in done:
            return
        done.add(id(m))
        t = inputs[0].detach().double()
        dims = [d for d in range(t.dim()) if d != 1]
        mu = t.mean(dim=dims)
        sigma = t.var(dim=dims, unbiased=False).clamp_min(1e-6).sqrt()
        m.running_mean.copy_((mu + m.running_mean.double() * sigma).to(m.running_mean.dtype))
        m.running_var.copy_((m.running_var.double() * sigma * sigma).to(m.running_var.dtype))

    handles = [m.register_forward_pre_hook(pre_hook) for m in bns]
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    if len(done) != len(bns):
        raise RuntimeError(f"calibration reached {len(done)} of {len(bns)} BatchNorms")
    return len(done)


def randomize_constant_biases(model):
    """Some torchvision models initialize Conv/Linear biases to 0 (squeezenet, vgg16,
    efficientnet's squeeze-excitation); torch.onnx then merges the identical initializers into
    Identity nodes.  Give every bias whose values are all equal uniform(+-1/sqrt(fan_in))
    values instead, torch's default bias init (uses the global, seeded generator). An all-zero
    weight (ViT's classifier head) gets the same uniform init, or the output would be the bias."""
    n = 0
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) or isinstance(m, nn.LayerNorm):
                continue
            w, b = getattr(m, "weight", None), getattr(m, "bias", None)
            if not isinstance(w, torch.Tensor) or not isinstance(b, torch.Tensor) or b.numel() < 2:
                continue
            bound = 1.0 / math.sqrt(max(w[0].numel(), 1))
            if w.numel() >= 2 and not bool(w.any()):
                w.uniform_(-bound, bound)
            if bool((b == b.reshape(-1)[0]).all()):
                b.uniform_(-bound, bound)
                n += 1
    return n


def disable_transformer_fast_paths(model):
    """torch 1.13 has inference fast paths (torch._transformer_encoder_layer_fwd and
    torch._native_multi_head_attention) that have no ONNX export.  Both are skipped when grad
    is enabled and the weights require grad, which is how this script traces and evaluates
    the transformer; in addition the layer-level one is switched off explicitly here (the flag
    only picks the fast path: the regular path still applies self.activation = relu)."""
    for m in model.modules():
        if isinstance(m, nn.TransformerEncoderLayer):
            m.activation_relu_or_gelu = 0
    for p in model.parameters():
        p.requires_grad_(True)


# --------------------------------------------------------------------------------------------
# Graph-only copy
# --------------------------------------------------------------------------------------------

def tensor_numel(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def value_info_for(t):
    return helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))


def make_graph_only(full: onnx.ModelProto):
    """Returns (graph-only model, weight names, kept-constant names)."""
    m = onnx.ModelProto()
    m.CopyFrom(full)
    g = m.graph
    input_names = {v.name for v in g.input}
    weights, kept = [], []
    new_inputs, const_nodes = [], []

    for t in g.initializer:
        if t.data_type in INT_TYPES and tensor_numel(t) <= SMALL_INT_LIMIT:
            # A shape/axes/pads constant, not a weight: keep it in the graph as a Constant node.
            c = TensorProto()
            c.CopyFrom(t)
            const_nodes.append(helper.make_node("Constant", [], [t.name], name="const_" + t.name, value=c))
            kept.append(t.name)
            if t.name in input_names:
                raise RuntimeError(f"initializer {t.name} is also a graph input")
        else:
            weights.append(t.name)
            if t.name not in input_names:
                new_inputs.append(value_info_for(t))

    # Big float Constant nodes become weight inputs too.
    nodes = []
    for n in g.node:
        if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
            t = n.attribute[0].t
            if t.data_type not in INT_TYPES and tensor_numel(t) > BIG_CONSTANT_LIMIT:
                vi = helper.make_tensor_value_info(n.output[0], t.data_type, list(t.dims))
                new_inputs.append(vi)
                weights.append(n.output[0])
                continue
        nodes.append(n)

    del g.initializer[:]
    del g.node[:]
    g.node.extend(const_nodes + nodes)
    g.input.extend(new_inputs)
    for name in weights:
        if "," in name:
            raise RuntimeError(f"weight name {name!r} contains a comma")
    del m.metadata_props[:]
    p = m.metadata_props.add()
    p.key = WEIGHTS_KEY
    p.value = ",".join(weights)
    # Doc strings only cost bytes.
    m.doc_string = ""
    g.doc_string = ""
    for n in g.node:
        n.doc_string = ""
    return m, weights, kept


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------

def supported_ops():
    exe = os.path.join(REPO, "build", "tensorsched")
    try:
        out = subprocess.run([exe, "ops"], capture_output=True, text=True, timeout=60, check=True).stdout
        ops = set(out.split())
        if ops:
            return ops, "tensorsched ops"
    except (OSError, subprocess.SubprocessError):
        pass
    return set(FALLBACK_SUPPORTED_OPS), "built-in list"


def op_histogram(model):
    return Counter(n.op_type for n in model.graph.node)


def shape_of(vi):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
            for d in vi.type.tensor_type.shape.dim]


def export_one(name, out_dir, graph_dir, seed, ops_ok, calibrate=True):
    ctor, in_shape = ALL_MODELS[name]
    t0 = time.time()
    torch.manual_seed(seed)
    model = ctor()
    model.eval()
    nbn = randomize_normalization(model)
    nbias = randomize_constant_biases(model)
    # torch 1.13's attention fast paths do not export (see disable_transformer_fast_paths).
    is_transformer = any(isinstance(m, nn.MultiheadAttention) for m in model.modules())
    if is_transformer:
        disable_transformer_fast_paths(model)

    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(*in_shape, generator=gen)
    ncal = 0
    if calibrate:
        xcal = torch.randn(*in_shape, generator=torch.Generator().manual_seed(seed + 2))
        ncal = calibrate_batchnorm(model, xcal)

    grad_mode = torch.enable_grad() if is_transformer else torch.no_grad()
    with grad_mode:
        y = model(x)
    y = y.detach()

    mdir = os.path.join(out_dir, name)
    ddir = os.path.join(mdir, "test_data_set_0")
    os.makedirs(ddir, exist_ok=True)
    path = os.path.join(mdir, "model.onnx")
    with (torch.enable_grad() if is_transformer else torch.no_grad()):
        torch.onnx.export(model, (x,), path, opset_version=OPSET, do_constant_folding=True,
                          input_names=["input"], output_names=["output"], dynamic_axes=None,
                          export_params=True, training=torch.onnx.TrainingMode.EVAL)

    onnx.checker.check_model(path)
    full = onnx.load(path)
    in_name = full.graph.input[0].name
    out_name = full.graph.output[0].name
    with open(os.path.join(ddir, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x.numpy(), name=in_name).SerializeToString())
    with open(os.path.join(ddir, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y.numpy(), name=out_name).SerializeToString())

    hist = op_histogram(full)
    bad = sorted(op for op in hist if op not in ops_ok and op not in FOLDED_OPS)

    go, weights, kept = make_graph_only(full)
    onnx.checker.check_model(go)
    onnx.shape_inference.infer_shapes(go, strict_mode=True)
    os.makedirs(graph_dir, exist_ok=True)
    gpath = os.path.join(graph_dir, name + ".onnx")
    onnx.save(go, gpath)
    gsize = os.path.getsize(gpath)

    nparams = sum(p.numel() for p in model.parameters())
    info = {
        "name": name, "seconds": time.time() - t0, "batchnorms": nbn, "biases": nbias, "calibrated": ncal,
        "out_absmax": float(y.abs().max()), "out_std": float(y.std()), "params": nparams,
        "input": (in_name, list(x.shape)), "output": (out_name, list(y.shape)),
        "onnx_output_shape": shape_of(full.graph.output[0]),
        "full_size": os.path.getsize(path), "graph_only_size": gsize,
        "weights": len(weights), "kept_constants": kept, "hist": hist, "unsupported": bad,
    }
    problems = []
    if gsize >= GRAPH_ONLY_LIMIT and name not in HELD_OUT:  # only the zoo's graph-only files are committed
        problems.append(f"graph-only file is {gsize} bytes (limit {GRAPH_ONLY_LIMIT})")
    if bad:
        problems.append("ops outside tensorsched's list: " + ", ".join(bad))
    info["problems"] = problems
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "models", "full"),
                    help="folder of full models and test data (default: models/full)")
    ap.add_argument("--graph-only-dir", default=os.path.join(REPO, "models"),
                    help="folder of graph-only copies (default: models)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated subset of: " + ",".join(MODELS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-calibrate", action="store_true",
                    help="keep the BatchNorm statistics exactly as drawn (activations then grow "
                         "with depth: resnet50 ~3e2, inception_v3 ~1e13)")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ap.add_argument("--held-out", action="store_true",
                    help="export the held-out networks (" + ",".join(HELD_OUT) + ") instead of the zoo")
    args = ap.parse_args()

    models = ",".join(HELD_OUT) if args.held_out else args.models
    names = [n.strip() for n in models.split(",") if n.strip()]
    unknown = [n for n in names if n not in ALL_MODELS]
    if unknown:
        ap.error("unknown model(s): " + ", ".join(unknown) + "; known: " + ", ".join(ALL_MODELS))
    torch.set_num_threads(args.threads)
    ops_ok, ops_src = supported_ops()
    print(f"supported-op list from {ops_src} ({len(ops_ok)} ops)")

    failed = []
    for name in names:          # one at a time
        print(f"== {name}", flush=True)
        try:
            info = export_one(name, args.out, args.graph_only_dir, args.seed, ops_ok,
                              calibrate=not args.no_calibrate)
        except Exception as e:  # keep going with the other models
            print(f"   FAILED: {type(e).__name__}: {e}", flush=True)
            failed.append(name)
            continue
        print(f"   input {info['input'][0]} {info['input'][1]} -> output {info['output'][0]} "
              f"{info['output'][1]}; {info['params']} params, {info['batchnorms']} BatchNorm/LayerNorms, "
              f"{info['biases']} constant biases randomized, {info['calibrated']} BatchNorms calibrated; "
              f"output std {info['out_std']:.3g}, max |y| {info['out_absmax']:.3g}; "
              f"{info['seconds']:.1f} s")
        print(f"   full {info['full_size']} B; graph-only {info['graph_only_size']} B, "
              f"{info['weights']} weight inputs, kept constants: {info['kept_constants'] or 'none'}")
        print("   ops: " + ", ".join(f"{op} {c}" for op, c in sorted(info["hist"].items())))
        for p in info["problems"]:
            print(f"   PROBLEM: {p}")
            failed.append(name)
    if failed:
        print("failed or with problems: " + ", ".join(sorted(set(failed))))
        return 1
    print("all exported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
