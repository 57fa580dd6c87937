#!/usr/bin/env python3
"""Writes the ONNX importer's test models and onnxruntime's outputs for them (tests/onnx.rs).

Each case is a small graph built with onnx.helper: one per supported operator (or attribute
form), a small MLP and a small CNN. For each it writes NAME.onnx and NAME.json:
{"inputs": {input name: tensor}, "outputs": [tensor, ...]}, a tensor being
{"dtype", "shape", "data" (flat)}, the form `relay-vm run --args` reads; a model with a
dynamic dimension may have "also": [{"inputs", "outputs"}, ...], more runs at other sizes. Inputs are drawn
from a seeded generator and outputs are onnxruntime's (one thread), so reruns are identical.

    make_models.py            rewrite the files next to this script
    make_models.py --check    regenerate in memory and compare with the files (CI): models and
                              inputs must be identical, outputs within 1e-5 relative
Needs numpy, onnx and onnxruntime only.
"""
import json
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = pathlib.Path(__file__).resolve().parent
F = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL
H = TensorProto.FLOAT16
CASES = []


def case(name, nodes, inputs, outputs, inits=(), opset=17, feeds=None, reference=None, also=()):
    """Registers graph `name`: `inputs`/`outputs` are (name, elem type, shape) triples,
    `inits` maps initializer names to arrays, `feeds` overrides generated input arrays,
    `reference` (the input arrays to the outputs) stands in for onnxruntime where it lacks
    the form, and `also` lists further input arrays (other sizes of a dynamic dimension)."""
    CASES.append((name, nodes, inputs, outputs, dict(inits), opset, feeds or {}, reference, list(also)))


def rng(name):
    return np.random.default_rng(abs(hash_name(name)))


def hash_name(name):
    return sum((i + 1) * ord(c) for i, c in enumerate(name))


def random_input(r, elem, shape):
    shape = [d if isinstance(d, int) else 2 for d in shape]
    if elem == F:
        return r.standard_normal(shape).astype(np.float32)
    if elem == H:
        return r.standard_normal(shape).astype(np.float16)
    if elem == BOOL:
        return r.random(shape) > 0.5
    return r.integers(-3, 3, size=shape).astype(np.int64)


def make_model(name, nodes, inputs, outputs, inits, opset):
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def onnxruntime(model, arrays):
    """onnxruntime's outputs of `model` on one thread."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, arrays)


def build(name, nodes, inputs, outputs, inits, opset, feeds, reference, also):
    r = rng(name)
    model = make_model(name, nodes, inputs, outputs, inits, opset)
    arrays = {n: feeds[n] if n in feeds else random_input(r, t, s) for n, t, s in inputs}

    def run(arrays):
        results = reference(arrays) if reference else onnxruntime(model, arrays)
        return {"inputs": {n: tensor(a) for n, a in arrays.items()}, "outputs": [tensor(a) for a in results]}

    doc = run(arrays)
    if also:
        doc["also"] = [run(more) for more in also]
    return model.SerializeToString(), doc


def tensor(a):
    a = np.asarray(a)
    data = a.reshape(-1).tolist()
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": data}


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=f"{op.lower()}_{outputs[0]}", **attrs)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# One graph per operator or attribute form.
for op in ["Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "Floor", "Ceil", "Sign"]:
    case(f"op_{op.lower()}", [node(op, ["x"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])])
positive = {"x": np.abs(f32(2, 3, 4, seed=1)) + 0.1}
for op in ["Log", "Sqrt", "Reciprocal"]:
    case(f"op_{op.lower()}", [node(op, ["x"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], feeds=positive)
case("op_leakyrelu", [node("LeakyRelu", ["x"], ["y"], alpha=0.1)], [("x", F, [3, 4])], [("y", F, [3, 4])])
case("op_leakyrelu_default", [node("LeakyRelu", ["x"], ["y"])], [("x", F, [3, 4])], [("y", F, [3, 4])])
case("op_elu", [node("Elu", ["x"], ["y"], alpha=0.5)], [("x", F, [3, 4])], [("y", F, [3, 4])])
for op in ["Add", "Sub", "Mul", "Div"]:
    case(f"op_{op.lower()}", [node(op, ["a", "b"], ["y"])], [("a", F, [2, 3, 4]), ("b", F, [4])], [("y", F, [2, 3, 4])])
case("op_pow", [node("Pow", ["x", "e"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])],
     inits={"e": np.float32(2.0)}, feeds={"x": np.abs(f32(2, 3, seed=2)) + 0.5})
case("op_pow_int_exponent", [node("Pow", ["x", "e"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])],
     inits={"e": np.int64(3)})
for op in ["Max", "Min", "Sum"]:
    case(f"op_{op.lower()}", [node(op, ["a", "b", "c"], ["y"])],
         [("a", F, [2, 3]), ("b", F, [3]), ("c", F, [2, 1])], [("y", F, [2, 3])])
case("op_clip", [node("Clip", ["x", "lo", "hi"], ["y"])], [("x", F, [3, 4])], [("y", F, [3, 4])],
     inits={"lo": np.float32(-0.5), "hi": np.float32(0.5)})
case("op_clip_min_only", [node("Clip", ["x", "lo"], ["y"])], [("x", F, [3, 4])], [("y", F, [3, 4])],
     inits={"lo": np.float32(0.0)})
for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
    case(f"op_{op.lower()}", [node(op, ["a", "b"], ["y"])], [("a", I64, [2, 3]), ("b", I64, [3])], [("y", BOOL, [2, 3])])
for op in ["And", "Or", "Xor"]:
    case(f"op_{op.lower()}", [node(op, ["a", "b"], ["y"])], [("a", BOOL, [2, 3]), ("b", BOOL, [2, 3])], [("y", BOOL, [2, 3])])
case("op_not", [node("Not", ["a"], ["y"])], [("a", BOOL, [4])], [("y", BOOL, [4])])
case("op_where", [node("Greater", ["x", "zero"], ["c"]), node("Where", ["c", "x", "y"], ["z"])],
     [("x", F, [2, 3]), ("y", F, [3])], [("z", F, [2, 3])], inits={"zero": np.float32(0)})
case("op_cast", [node("Cast", ["x"], ["y"], to=TensorProto.INT64)], [("x", F, [2, 3])], [("y", I64, [2, 3])],
     feeds={"x": f32(2, 3, seed=3) * 4})
case("op_conv", [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2])],
     [("x", F, [1, 3, 9, 9])], [("y", F, [1, 4, 5, 5])], inits={"w": f32(4, 3, 3, 3), "b": f32(4)})
case("op_conv_groups_dilations", [node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 2], pads=[2, 1, 2, 1])],
     [("x", F, [1, 4, 8, 8])], [("y", F, [1, 6, 8, 6])], inits={"w": f32(6, 2, 3, 3)})
case("op_conv_same_upper", [node("Conv", ["x", "w"], ["y"], auto_pad="SAME_UPPER", strides=[2, 2])],
     [("x", F, [1, 2, 7, 8])], [("y", F, [1, 3, 4, 4])], inits={"w": f32(3, 2, 2, 2)})
case("op_maxpool", [node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])],
     [("x", F, [1, 2, 8, 8])], [("y", F, [1, 2, 4, 4])])
case("op_maxpool_ceil", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)],
     [("x", F, [1, 2, 7, 7])], [("y", F, [1, 2, 4, 4])])
case("op_averagepool", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
     [("x", F, [1, 2, 6, 6])], [("y", F, [1, 2, 6, 6])])
case("op_averagepool_include_pad", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                         pads=[1, 1, 1, 1], count_include_pad=1)],
     [("x", F, [1, 2, 6, 6])], [("y", F, [1, 2, 3, 3])])
case("op_globalaveragepool", [node("GlobalAveragePool", ["x"], ["y"])], [("x", F, [2, 3, 4, 5])], [("y", F, [2, 3, 1, 1])])
case("op_globalmaxpool", [node("GlobalMaxPool", ["x"], ["y"])], [("x", F, [2, 3, 4, 5])], [("y", F, [2, 3, 1, 1])])
case("op_conv3d", [node("Conv", ["x", "w", "b"], ["y"], pads=[1, 0, 1, 0, 1, 1], strides=[1, 2, 2], group=2)],
     [("x", F, [1, 4, 4, 7, 6])], [("y", F, [1, 6, 3, 4, 3])], inits={"w": f32(6, 2, 3, 2, 3), "b": f32(6)})
case("op_conv1d_same_lower", [node("Conv", ["x", "w"], ["y"], auto_pad="SAME_LOWER", strides=[2])],
     [("x", F, [2, 3, 9])], [("y", F, [2, 4, 5])], inits={"w": f32(4, 3, 3)})
case("op_maxpool3d_ceil", [node("MaxPool", ["x"], ["y"], kernel_shape=[2, 3, 2], strides=[2, 2, 2], pads=[0, 1, 0, 1, 1, 0],
                                ceil_mode=1)],
     [("x", F, [1, 2, 5, 6, 7])], [("y", F, [1, 2, 3, 4, 4])])
case("op_averagepool3d_include_pad", [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3, 3], strides=[2, 2, 2],
                                           pads=[1, 1, 1, 1, 1, 1], count_include_pad=1)],
     [("x", F, [1, 2, 5, 6, 6])], [("y", F, [1, 2, 3, 3, 3])])
case("op_averagepool1d", [node("AveragePool", ["x"], ["y"], kernel_shape=[3], pads=[1, 1])],
     [("x", F, [2, 3, 8])], [("y", F, [2, 3, 8])])
for mode in ["bilinear", "nearest", "bicubic"]:
    for padding_mode in ["zeros", "border", "reflection"]:
        case(f"op_gridsample_{mode}_{padding_mode}", [node("GridSample", ["x", "g"], ["y"], mode=mode,
                                                            padding_mode=padding_mode, align_corners=int(mode == "bicubic"))],
             [("x", F, [2, 3, 5, 6]), ("g", F, [2, 4, 3, 2])], [("y", F, [2, 3, 4, 3])], opset=16,
             feeds={"g": np.clip(f32(2, 4, 3, 2, seed=7) * 0.8, -1.3, 1.3)})
case("op_convtranspose3d", [node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 1],
                                   output_padding=[1, 0, 0], group=2)],
     [("x", F, [1, 4, 3, 4, 3])], [("y", F, [1, 6, 6, 4, 5])], inits={"w": f32(4, 3, 2, 2, 2), "b": f32(6)})
case("op_convtranspose2d_dilations", [node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], dilations=[2, 1],
                                           pads=[1, 1, 0, 1], output_padding=[1, 0])],
     [("x", F, [2, 3, 4, 5])], [("y", F, [2, 2, 11, 8])], inits={"w": f32(3, 2, 3, 2)})
case("op_convtranspose1d", [node("ConvTranspose", ["x", "w"], ["y"], strides=[3])],
     [("x", F, [1, 2, 5])], [("y", F, [1, 4, 16])], inits={"w": f32(2, 4, 4)})
roi_boxes = np.array([[0.5, 1.0, 6.0, 5.5], [-1.0, 0.0, 3.0, 2.5], [2.0, 2.0, 2.2, 2.1], [4.0, 3.0, 12.0, 9.0]],
                     np.float32)
case("op_roialign", [node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=2, output_width=3, spatial_scale=0.5)],
     [("x", F, [2, 3, 6, 7])], [("y", F, [4, 3, 2, 3])], opset=11,
     inits={"rois": roi_boxes, "bi": np.array([0, 1, 1, 0], np.int64)})
case("op_roialign_ratio_output_half_pixel",
     [node("RoiAlign", ["x", "rois", "bi"], ["y"], output_height=3, output_width=2, sampling_ratio=2,
           coordinate_transformation_mode="output_half_pixel")],
     [("x", F, [2, 2, 5, 6])], [("y", F, [4, 2, 3, 2])], opset=16,
     inits={"rois": roi_boxes, "bi": np.array([1, 0, 1, 0], np.int64)})
def nms_boxes(batch, n, seed, centre=False):
    """batch x n boxes around centres in [0, 3] of sizes 0.5..2, so that some overlap: corners
    (y1, x1, y2, x2), some in the other order, or (x, y, width, height) with `centre`."""
    r = np.random.default_rng(seed)
    mid, size = r.uniform(0, 3, (batch, n, 2)), r.uniform(0.5, 2, (batch, n, 2))
    if centre:
        return np.concatenate([mid, size], axis=2).astype(np.float32)
    lo, hi = mid - size / 2, mid + size / 2
    swap = r.random((batch, n, 1)) < 0.3
    return np.concatenate([np.where(swap, hi, lo), np.where(swap, lo, hi)], axis=2).astype(np.float32)


def nms_scores(batch, classes, n, seed):
    return np.random.default_rng(seed).random((batch, classes, n)).astype(np.float32)


NMS_IN = [("boxes", F, [2, 8, 4]), ("scores", F, [2, 3, 8])]
NMS_OUT = [("selected", I64, ["n", 3])]
case("op_nonmaxsuppression", [node("NonMaxSuppression", ["boxes", "scores", "m", "iou", "s"], ["selected"])],
     NMS_IN, NMS_OUT, opset=11,
     inits={"m": np.array([3], np.int64), "iou": np.array([0.3], np.float32), "s": np.array([0.2], np.float32)},
     feeds={"boxes": nms_boxes(2, 8, 1), "scores": nms_scores(2, 3, 8, 2)})
case("op_nonmaxsuppression_center_point_box",
     [node("NonMaxSuppression", ["boxes", "scores", "m", "iou"], ["selected"], center_point_box=1)],
     NMS_IN, NMS_OUT, opset=11, inits={"m": np.array([5], np.int64), "iou": np.array([0.4], np.float32)},
     feeds={"boxes": nms_boxes(2, 8, 3, centre=True), "scores": nms_scores(2, 3, 8, 4)})
case("op_nonmaxsuppression_limit_only", [node("NonMaxSuppression", ["boxes", "scores", "m", "", ""], ["selected"])],
     NMS_IN, NMS_OUT, opset=21, inits={"m": np.array(4, np.int64)},
     feeds={"boxes": nms_boxes(2, 8, 5), "scores": nms_scores(2, 3, 8, 6)})
case("op_nonmaxsuppression_no_limit_is_none", [node("NonMaxSuppression", ["boxes", "scores"], ["selected"])],
     NMS_IN, NMS_OUT, opset=11, feeds={"boxes": nms_boxes(2, 8, 7), "scores": nms_scores(2, 3, 8, 8)})
case("op_nonmaxsuppression_run_time_limit",
     [node("NonMaxSuppression", ["boxes", "scores", "m", "iou", "s"], ["selected"])],
     NMS_IN + [("m", I64, [1]), ("iou", F, [1]), ("s", F, [1])], NMS_OUT, opset=13,
     feeds={"boxes": nms_boxes(2, 8, 9), "scores": nms_scores(2, 3, 8, 10), "m": np.array([0], np.int64),
            "iou": np.array([0.5], np.float32), "s": np.array([0.1], np.float32)},
     also=[{"boxes": nms_boxes(2, 8, 11), "scores": nms_scores(2, 3, 8, 12), "m": np.array([2], np.int64),
            "iou": np.array([0.5], np.float32), "s": np.array([0.1], np.float32)}])


def inside_offsets(shape, kernel, image, strides, pads, seed):
    """DeformConv offsets whose every sampled position lies inside the image (where TVM's
    bilinear rule and ONNX's agree): random, then pulled into [0.01, size - 1.01]."""
    n, channels, oh, ow = shape
    r = np.random.default_rng(seed)
    off = np.zeros(shape, np.float32)
    for ch in range(channels):
        tap, axis = (ch // 2) % (kernel[0] * kernel[1]), ch % 2
        k = (tap // kernel[1], tap % kernel[1])[axis]
        out = (oh, ow)[axis]
        base = np.arange(out) * strides[axis] - pads[axis] + k
        base = base[:, None] if axis == 0 else base[None, :]
        target = np.clip(base + r.uniform(-1.5, 1.5, (n, oh, ow)), 0.01, image[axis] - 1.01)
        off[:, ch] = target - base
    return off


case("op_deformconv", [node("DeformConv", ["x", "w", "off", "b"], ["y"], pads=[1, 1, 1, 1], offset_group=2)],
     [("x", F, [1, 4, 5, 6])], [("y", F, [1, 3, 5, 6])], opset=19,
     inits={"w": f32(3, 4, 3, 3), "b": f32(3), "off": inside_offsets((1, 36, 5, 6), (3, 3), (5, 6), (1, 1), (1, 1), 11)})
case("op_deformconv_strides_group", [node("DeformConv", ["x", "w", "off"], ["y"], strides=[2, 2], group=2)],
     [("x", F, [2, 4, 7, 6])], [("y", F, [2, 2, 3, 3])], opset=19,
     inits={"w": f32(2, 2, 2, 2), "off": inside_offsets((2, 8, 3, 3), (2, 2), (7, 6), (2, 2), (0, 0), 12)})


case("op_batchnormalization", [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
     [("x", F, [2, 3, 4, 4])], [("y", F, [2, 3, 4, 4])],
     inits={"s": f32(3, seed=1), "b": f32(3, seed=2), "m": f32(3, seed=3), "v": np.abs(f32(3, seed=4)) + 0.5})
case("op_gemm", [node("Gemm", ["a", "w", "c"], ["y"], transB=1)], [("a", F, [2, 5])], [("y", F, [2, 3])],
     inits={"w": f32(3, 5), "c": f32(3)})
case("op_gemm_trans_a_alpha_beta", [node("Gemm", ["a", "b", "c"], ["y"], transA=1, alpha=0.5, beta=2.0)],
     [("a", F, [5, 2]), ("b", F, [5, 3])], [("y", F, [2, 3])], inits={"c": f32(2, 3)})
case("op_matmul", [node("MatMul", ["a", "b"], ["y"])], [("a", F, [3, 4]), ("b", F, [4, 5])], [("y", F, [3, 5])])
case("op_matmul_3d_2d", [node("MatMul", ["a", "w"], ["y"])], [("a", F, [2, 3, 4])], [("y", F, [2, 3, 5])],
     inits={"w": f32(4, 5)})
case("op_matmul_batch", [node("MatMul", ["a", "b"], ["y"])], [("a", F, [2, 3, 4]), ("b", F, [2, 4, 5])], [("y", F, [2, 3, 5])])
case("op_matmul_broadcast_4d", [node("MatMul", ["a", "b"], ["y"])], [("a", F, [2, 1, 3, 4]), ("b", F, [1, 2, 4, 5])],
     [("y", F, [2, 2, 3, 5])])
case("op_matmul_vector", [node("MatMul", ["v", "b"], ["y"])], [("v", F, [4]), ("b", F, [4, 5])], [("y", F, [5])])
case("op_flatten", [node("Flatten", ["x"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 12])])
case("op_flatten_axis2", [node("Flatten", ["x"], ["y"], axis=2)], [("x", F, [2, 3, 4, 5])], [("y", F, [6, 20])])
case("op_reshape", [node("Reshape", ["x", "s"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 4, 3])],
     inits={"s": np.array([0, 4, -1], dtype=np.int64)})
case("op_transpose", [node("Transpose", ["x"], ["y"], perm=[1, 2, 0])], [("x", F, [2, 3, 4])], [("y", F, [3, 4, 2])])
case("op_concat", [node("Concat", ["a", "b", "c"], ["y"], axis=-1)], [("a", F, [2, 1]), ("b", F, [2, 3]), ("c", F, [2, 2])],
     [("y", F, [2, 6])])
case("op_softmax", [node("Softmax", ["x"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])])
case("op_softmax_opset11", [node("Softmax", ["x"], ["y"], axis=1)], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], opset=11)
case("op_logsoftmax", [node("LogSoftmax", ["x"], ["y"], axis=1)], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])])
case("op_squeeze", [node("Squeeze", ["x", "axes"], ["y"])], [("x", F, [2, 1, 3, 1])], [("y", F, [2, 3, 1])],
     inits={"axes": np.array([1], dtype=np.int64)})
case("op_squeeze_opset11", [node("Squeeze", ["x"], ["y"])], [("x", F, [2, 1, 3, 1])], [("y", F, [2, 3])], opset=11)
case("op_unsqueeze", [node("Unsqueeze", ["x", "axes"], ["y"])], [("x", F, [2, 3])], [("y", F, [1, 2, 3, 1])],
     inits={"axes": np.array([0, -1], dtype=np.int64)})
case("op_identity_dropout", [node("Identity", ["x"], ["i"]), node("Dropout", ["i"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])])
case("op_constant", [helper.make_node("Constant", [], ["k"], name="k", value=numpy_helper.from_array(f32(3, seed=5))),
                     node("Add", ["x", "k"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])])
case("op_constant_scalar", [helper.make_node("Constant", [], ["k"], name="k", value_float=2.5), node("Mul", ["x", "k"], ["y"])],
     [("x", F, [2, 3])], [("y", F, [2, 3])])
case("op_gather", [node("Gather", ["table", "i"], ["y"])], [("i", I64, [2, 3])], [("y", F, [2, 3, 4])],
     inits={"table": f32(5, 4)}, feeds={"i": np.array([[0, 4, -1], [2, -5, 1]], dtype=np.int64)})
case("op_gather_axis1", [node("Gather", ["x", "i"], ["y"], axis=1)], [("x", F, [2, 5, 3])], [("y", F, [2, 2, 3])],
     inits={"i": np.array([3, 0], dtype=np.int64)})
case("op_reducemean", [node("ReduceMean", ["x"], ["y"], axes=[1, -1])], [("x", F, [2, 3, 4])], [("y", F, [2, 1, 1])])
case("op_reducesum", [node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], [("x", F, [2, 3, 4])], [("y", F, [2, 4])],
     inits={"axes": np.array([1], dtype=np.int64)})
case("op_reducemax_opset18", [node("ReduceMax", ["x", "axes"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [1, 3, 1])],
     inits={"axes": np.array([0, 2], dtype=np.int64)}, opset=18)
case("op_reducemin_all", [node("ReduceMin", ["x"], ["y"], keepdims=0)], [("x", F, [2, 3])], [("y", F, [])])
case("op_slice", [node("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], [("x", F, [4, 6, 5])], [("y", F, [4, 2, 2])],
     inits={"st": np.array([1, -4], dtype=np.int64), "en": np.array([2**63 - 1, 4], dtype=np.int64),
            "ax": np.array([2, 1], dtype=np.int64), "sp": np.array([2, 1], dtype=np.int64)})
case("op_slice_default_axes", [node("Slice", ["x", "st", "en"], ["y"])], [("x", F, [7, 3])], [("y", F, [6, 3])],
     inits={"st": np.array([0], dtype=np.int64), "en": np.array([-1], dtype=np.int64)})
case("op_split", [node("Split", ["x", "s"], ["a", "b"], axis=1)], [("x", F, [2, 6])], [("a", F, [2, 2]), ("b", F, [2, 4])],
     inits={"s": np.array([2, 4], dtype=np.int64)})
case("op_split_equal_opset18", [node("Split", ["x"], ["a", "b", "c"], num_outputs=3)], [("x", F, [6, 2])],
     [("a", F, [2, 2]), ("b", F, [2, 2]), ("c", F, [2, 2])], opset=18)
case("op_pad", [node("Pad", ["x", "p", "v"], ["y"])], [("x", F, [2, 3])], [("y", F, [3, 6])],
     inits={"p": np.array([1, 2, 0, 1], dtype=np.int64), "v": np.float32(1.5)})
case("op_pad_reflect", [node("Pad", ["x", "p"], ["y"], mode="reflect")], [("x", F, [1, 1, 4, 4])], [("y", F, [1, 1, 6, 8])],
     inits={"p": np.array([0, 0, 1, 2, 0, 0, 1, 2], dtype=np.int64)})
case("op_expand", [node("Expand", ["x", "s"], ["y"])], [("x", F, [3, 1])], [("y", F, [2, 3, 4])],
     inits={"s": np.array([2, 1, 4], dtype=np.int64)})
case("op_gatherelements", [node("GatherElements", ["x", "i"], ["y"], axis=1)], [("x", F, [3, 4])], [("y", F, [3, 2])],
     inits={"i": np.array([[0, -1], [3, 1], [2, 2]], dtype=np.int64)})
case("op_gathernd", [node("GatherND", ["x", "i"], ["y"])], [("x", F, [3, 4, 2])], [("y", F, [2, 2])],
     inits={"i": np.array([[0, 1], [2, 3]], dtype=np.int64)})
case("op_gathernd_batch", [node("GatherND", ["x", "i"], ["y"], batch_dims=1)], [("x", F, [2, 3, 4])], [("y", F, [2, 4])],
     inits={"i": np.array([[1], [2]], dtype=np.int64)})
case("op_scatterelements_add", [node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="add")],
     [("x", F, [2, 4]), ("u", F, [2, 3])], [("y", F, [2, 4])],
     inits={"i": np.array([[0, 3, 0], [1, -1, 2]], dtype=np.int64)}, opset=18)
case("op_scatternd", [node("ScatterND", ["x", "i", "u"], ["y"])], [("x", F, [4, 3]), ("u", F, [2, 3])], [("y", F, [4, 3])],
     inits={"i": np.array([[3], [1]], dtype=np.int64)})
case("op_onehot", [node("OneHot", ["i", "d", "v"], ["y"], axis=1)], [("i", I64, [2, 3])], [("y", F, [2, 4, 3])],
     inits={"d": np.array([4], dtype=np.int64), "v": np.array([-1.0, 2.5], dtype=np.float32)},
     feeds={"i": np.array([[0, 3, -1], [5, -4, 2]], dtype=np.int64)})
case("op_tile", [node("Tile", ["x", "r"], ["y"])], [("x", F, [2, 3])], [("y", F, [4, 3])],
     inits={"r": np.array([2, 1], dtype=np.int64)})
case("op_topk", [node("TopK", ["x", "k"], ["v", "i"], axis=1)], [("x", F, [3, 5])], [("v", F, [3, 2]), ("i", I64, [3, 2])],
     inits={"k": np.array([2], dtype=np.int64)})
case("op_nonzero", [node("NonZero", ["x"], ["y"])], [("x", F, [3, 4])], [("y", I64, [2, "n"])],
     feeds={"x": np.array([[0, 1.5, 0, 2], [-3, 0, 0, 0], [0, 0, 4, 0.5]], dtype=np.float32)})
case("op_reshape_run_time_shape", [node("Reshape", ["x", "s"], ["y"])], [("x", F, [2, 3, 4]), ("s", I64, [3])],
     [("y", F, ["a", "b", "c"])], feeds={"s": np.array([4, 0, -1], dtype=np.int64)})
case("op_topk_smallest", [node("TopK", ["x", "k"], ["v", "i"], axis=0, largest=0)], [("x", F, [4, 2])],
     [("v", F, [3, 2]), ("i", I64, [3, 2])], inits={"k": np.array([3], dtype=np.int64)})

# float16 graphs: onnxruntime computes each operator in float32 (on the CPU it casts around
# the float16 ones it has no kernel for) and rounds once, as the importer's float16 operators
# do; tests/onnx.rs compares float16 outputs within 2e-3 relative + 1e-3 absolute (about two
# float16 steps), since the two sum in different orders before that rounding.
def f16(*shape, seed=0):
    return f32(*shape, seed=seed).astype(np.float16)


case("op_conv_relu_float16", [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["y"])],
     [("x", H, [1, 3, 6, 6])], [("y", H, [1, 4, 6, 6])], inits={"w": f16(4, 3, 3, 3), "b": f16(4)})
case("op_matmul_add_float16", [node("MatMul", ["a", "w"], ["c"]), node("Add", ["c", "b"], ["y"])],
     [("a", H, [3, 8])], [("y", H, [3, 5])], inits={"w": f16(8, 5), "b": f16(5)})
case("op_cast_bfloat16_float16", [node("Cast", ["x"], ["b"], to=TensorProto.BFLOAT16),
                                  node("Cast", ["b"], ["h"], to=H), node("Cast", ["h"], ["y"], to=F)],
     [("x", F, [2, 5])], [("y", F, [2, 5])], feeds={"x": f32(2, 5, seed=8) * 100})

# If: a branch may read the enclosing graph's values and hold initializers of its own.
def branch(name, nodes, outputs, inits=()):
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(n, F, [2, 3]) for n in outputs],
                             [numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()])


if_then = branch("then", [node("Mul", ["x", "two"], ["doubled"])], ["doubled"], inits={"two": np.float32(2.0)})
if_else = branch("else", [node("Neg", ["x"], ["negated"])], ["negated"])
for taken, sign in [("then", 1), ("else", -1)]:
    case(f"op_if_{taken}", [node("ReduceSum", ["x"], ["total"], keepdims=0), node("Greater", ["total", "zero"], ["c"]),
                            helper.make_node("If", ["c"], ["y"], name="if", then_branch=if_then, else_branch=if_else)],
         [("x", F, [2, 3])], [("y", F, [2, 3])], inits={"zero": np.float32(0)},
         feeds={"x": sign * (np.abs(f32(2, 3, seed=14)) + 0.1)})
case("op_if_two_outputs", [helper.make_node("If", ["c"], ["p", "q"], name="if2",
                                            then_branch=branch("then2", [node("Abs", ["x"], ["a"]), node("Exp", ["x"], ["e"])], ["a", "e"]),
                                            else_branch=branch("else2", [node("Neg", ["x"], ["n"]), node("Identity", ["x"], ["i"])], ["n", "i"]))],
     [("c", BOOL, [1]), ("x", F, [2, 3])], [("p", F, [2, 3]), ("q", F, [2, 3])], feeds={"c": np.array([False])})

# Loop: a counted loop whose body reads the iteration number, and a data-dependent `while`.
def loop_body(name, nodes, cond_out):
    return helper.make_graph(nodes, name, [helper.make_tensor_value_info("iter", I64, []),
                                           helper.make_tensor_value_info("cond_in", BOOL, []),
                                           helper.make_tensor_value_info("v", F, [2, 3])],
                             [helper.make_tensor_value_info(cond_out, BOOL, []), helper.make_tensor_value_info("v_out", F, [2, 3])])


counted = loop_body("counted", [node("Cast", ["iter"], ["i_f"], to=F), node("Add", ["v", "i_f"], ["v_out"]),
                                node("Identity", ["cond_in"], ["cond_out"])], "cond_out")
case("op_loop_counted", [helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop", body=counted)],
     [("x", F, [2, 3])], [("y", F, [2, 3])], inits={"m": np.int64(4)})
doubling = loop_body("doubling", [node("Mul", ["v", "two"], ["v_out"]), node("ReduceSum", ["v_out"], ["total"], keepdims=0),
                                  node("Less", ["total", "limit"], ["more"])], "more")
case("op_loop_while", [helper.make_node("Loop", ["", "go", "x"], ["y"], name="while", body=doubling)],
     [("x", F, [2, 3])], [("y", F, [2, 3])],
     inits={"go": np.array(True), "two": np.float32(2.0), "limit": np.float32(100.0)},
     feeds={"x": np.abs(f32(2, 3, seed=15)) + 0.1})

two_carried = helper.make_graph(
    [node("Add", ["v", "w"], ["v_out"]), node("Mul", ["w", "half"], ["w_out"]), node("Identity", ["cond_in"], ["cond_out"])],
    "two_carried",
    [helper.make_tensor_value_info("iter", I64, []), helper.make_tensor_value_info("cond_in", BOOL, []),
     helper.make_tensor_value_info("v", F, [2, 3]), helper.make_tensor_value_info("w", F, [3])],
    [helper.make_tensor_value_info("cond_out", BOOL, []), helper.make_tensor_value_info("v_out", F, [2, 3]),
     helper.make_tensor_value_info("w_out", F, [3])],
    [numpy_helper.from_array(np.float32(0.5), "half")])
case("op_loop_two_carried", [helper.make_node("Loop", ["m", "go", "x", "w0"], ["y", "z"], name="loop2", body=two_carried)],
     [("x", F, [2, 3]), ("w0", F, [3])], [("y", F, [2, 3]), ("z", F, [3])],
     inits={"m": np.array([3], dtype=np.int64), "go": np.array(True)})

# Scan outputs: each iteration's values stacked on a new first axis, over a data-dependent
# number of iterations (a `while`) and over a counted one.
scanning = helper.make_graph(
    [node("Mul", ["v", "two"], ["v_out"]), node("ReduceSum", ["v_out"], ["total"], keepdims=0),
     node("Less", ["total", "limit"], ["more"]), node("Identity", ["v"], ["seen"]),
     node("Cast", ["iter"], ["step"], to=F)],
    "scanning",
    [helper.make_tensor_value_info("iter", I64, []), helper.make_tensor_value_info("cond_in", BOOL, []),
     helper.make_tensor_value_info("v", F, [2, 3])],
    [helper.make_tensor_value_info("more", BOOL, []), helper.make_tensor_value_info("v_out", F, [2, 3]),
     helper.make_tensor_value_info("seen", F, [2, 3]), helper.make_tensor_value_info("step", F, [])])
for name, trips, go, init in [("op_loop_scan_outputs_while", "", "go", {"go": np.array(True)}),
                              ("op_loop_scan_outputs_counted", "m", "", {"m": np.int64(3)})]:
    case(name, [helper.make_node("Loop", [trips, go, "x"], ["y", "history", "steps"], name="loop_scan", body=scanning)],
         [("x", F, [2, 3])], [("y", F, [2, 3]), ("history", F, ["T", 2, 3]), ("steps", F, ["T"])],
         inits={**init, "two": np.float32(2.0), "limit": np.float32(100.0)},
         feeds={"x": np.abs(f32(2, 3, seed=16)) + 0.1})

# A small MLP with a dynamic batch dimension (`N` becomes `?`).
case("mlp", [node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1), node("Relu", ["h"], ["r"]),
             node("Gemm", ["r", "fc2.weight", "fc2.bias"], ["logits"], transB=1), node("Softmax", ["logits"], ["probs"])],
     [("x", F, ["N", 8])], [("probs", F, ["N", 4])],
     inits={"fc1.weight": f32(16, 8, seed=6), "fc1.bias": f32(16, seed=7), "fc2.weight": f32(4, 16, seed=8),
            "fc2.bias": f32(4, seed=9)})

# A small CNN: conv/bn/relu/pool twice, global pooling, flatten, a dense layer.
def bn(prefix, c, seed):
    return {f"{prefix}.weight": np.abs(f32(c, seed=seed)) + 0.5, f"{prefix}.bias": f32(c, seed=seed + 1),
            f"{prefix}.running_mean": f32(c, seed=seed + 2), f"{prefix}.running_var": np.abs(f32(c, seed=seed + 3)) + 0.5}


cnn_inits = {"conv1.weight": f32(8, 3, 3, 3, seed=10) * 0.3, "conv2.weight": f32(16, 8, 3, 3, seed=11) * 0.2,
             "fc.weight": f32(10, 16, seed=12), "fc.bias": f32(10, seed=13), **bn("bn1", 8, 20), **bn("bn2", 16, 30)}
cnn_nodes = []
x = "image"
for i, c in [(1, 8), (2, 16)]:
    p = f"bn{i}"
    cnn_nodes += [node("Conv", [x, f"conv{i}.weight"], [f"/conv{i}/Conv_output_0"], pads=[1, 1, 1, 1]),
                  node("BatchNormalization", [f"/conv{i}/Conv_output_0", f"{p}.weight", f"{p}.bias", f"{p}.running_mean",
                                              f"{p}.running_var"], [f"/bn{i}/out"]),
                  node("Relu", [f"/bn{i}/out"], [f"/relu{i}/out"]),
                  node("MaxPool", [f"/relu{i}/out"], [f"/pool{i}/out"], kernel_shape=[2, 2], strides=[2, 2])]
    x = f"/pool{i}/out"
cnn_nodes += [node("GlobalAveragePool", [x], ["/gap/out"]), node("Flatten", ["/gap/out"], ["/flatten/out"]),
              node("Gemm", ["/flatten/out", "fc.weight", "fc.bias"], ["logits"], transB=1)]
case("cnn", cnn_nodes, [("image", F, [1, 3, 16, 16])], [("logits", F, [1, 10])], inits=cnn_inits)


def same_runs(old, new):
    """Whether two runs have the same inputs and outputs within the tolerance."""
    return old["inputs"] == new["inputs"] and same_outputs(old["outputs"], new["outputs"])


def same_outputs(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x["shape"] != y["shape"] or x["dtype"] != y["dtype"]:
            return False
        if not np.allclose(np.array(x["data"], dtype=np.float64), np.array(y["data"], dtype=np.float64),
                           rtol=1e-5, atol=1e-6):
            return False
    return True

# Creation, masking, sub-pixel and normalisation operators.
case("op_range", [node("Range", ["s", "l", "d"], ["r"]), node("Add", ["x", "r"], ["y"])], [("x", F, [2, 5])], [("y", F, [2, 5])],
     inits={"s": np.float32(1.0), "l": np.float32(-1.5), "d": np.float32(-0.5)})
case("op_range_int64", [node("Range", ["s", "l", "d"], ["r"]), node("Mul", ["x", "r"], ["y"])], [("x", I64, [4])], [("y", I64, [4])],
     inits={"s": np.int64(2), "l": np.int64(10), "d": np.int64(2)})
case("op_constantofshape", [node("ConstantOfShape", ["s"], ["c"], value=numpy_helper.from_array(np.array([2.5], np.float32))),
                            node("Mul", ["x", "c"], ["y"])], [("x", F, [2, 3])], [("y", F, [2, 3])],
     inits={"s": np.array([2, 3], dtype=np.int64)})
case("op_constantofshape_default", [node("ConstantOfShape", ["s"], ["c"]), node("Add", ["x", "c"], ["y"])],
     [("x", F, [3])], [("y", F, [3])], inits={"s": np.array([3], dtype=np.int64)})
case("op_trilu", [node("Trilu", ["x", "k"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], inits={"k": np.int64(1)})
case("op_trilu_lower", [node("Trilu", ["x"], ["y"], upper=0)], [("x", F, [4, 3])], [("y", F, [4, 3])])
case("op_cumsum", [node("CumSum", ["x", "a"], ["y"])], [("x", F, [3, 4])], [("y", F, [3, 4])], inits={"a": np.int64(1)})
case("op_cumsum_exclusive_reverse", [node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)], [("x", F, [3, 4])],
     [("y", F, [3, 4])], inits={"a": np.array([0], dtype=np.int64)})
case("op_depthtospace", [node("DepthToSpace", ["x"], ["y"], blocksize=2)], [("x", F, [1, 8, 2, 3])], [("y", F, [1, 2, 4, 6])])
case("op_depthtospace_crd", [node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], [("x", F, [2, 4, 2, 2])],
     [("y", F, [2, 1, 4, 4])])
case("op_spacetodepth", [node("SpaceToDepth", ["x"], ["y"], blocksize=2)], [("x", F, [1, 2, 4, 6])], [("y", F, [1, 8, 2, 3])])
case("op_prelu", [node("PRelu", ["x", "s"], ["y"])], [("x", F, [2, 3, 4, 4])], [("y", F, [2, 3, 4, 4])],
     inits={"s": f32(3, 1, 1, seed=6)})
case("op_prelu_broadcast", [node("PRelu", ["x", "s"], ["y"])], [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])],
     inits={"s": f32(4, seed=7)})
case("op_instancenormalization", [node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
     [("x", F, [2, 3, 4, 5])], [("y", F, [2, 3, 4, 5])], inits={"s": f32(3, seed=8), "b": f32(3, seed=9)})
case("op_lrn", [node("LRN", ["x"], ["y"], size=3, alpha=0.5, beta=0.6, bias=1.5)], [("x", F, [2, 5, 3, 3])],
     [("y", F, [2, 5, 3, 3])])

case("op_layernormalization", [node("LayerNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)],
     [("x", F, [2, 3, 6])], [("y", F, [2, 3, 6])], inits={"s": f32(6, seed=15), "b": f32(6, seed=16)})
case("op_layernormalization_axis1_no_bias", [node("LayerNormalization", ["x", "s"], ["y"], axis=1)],
     [("x", F, [2, 3, 4])], [("y", F, [2, 3, 4])], inits={"s": f32(3, 4, seed=17)})
case("op_mod", [node("Mod", ["a", "b"], ["y"])], [("a", I64, [2, 3]), ("b", I64, [3])], [("y", I64, [2, 3])],
     feeds={"b": np.array([3, -2, 5], dtype=np.int64)})
case("op_mod_fmod", [node("Mod", ["a", "b"], ["y"], fmod=1)], [("a", F, [2, 3])], [("y", F, [2, 3])],
     inits={"b": np.array([0.7, -1.5, 2.0], dtype=np.float32)})
case("op_shape", [node("Shape", ["x"], ["s"]), node("Cast", ["s"], ["f"], to=F), node("Mul", ["x", "f"], ["y"])],
     [("x", F, [2, 3, 3])], [("y", F, [2, 3, 3])])
case("op_shape_start_end", [node("Shape", ["x"], ["s"], start=1, end=-1), node("Cast", ["s"], ["f"], to=F),
                            node("Mul", ["x", "f"], ["y"])], [("x", F, [2, 4, 1])], [("y", F, [2, 4, 1])])
# The chains exporters write for a shape, folded at import: x viewed as [batch, 2, -1], the
# batch read from x and the rest computed (Gather, Unsqueeze, Concat, Mod, Div, Slice, Reshape).
case("fold_shape_chain", [
    node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"]), node("Unsqueeze", ["n", "axes"], ["n1"]),
    node("Slice", ["s", "one", "three"], ["rest"]), node("Mod", ["rest", "four"], ["m"]),
    node("Div", ["m", "two"], ["half"]), node("Sub", ["half", "half"], ["zeros"]), node("Add", ["zeros", "minus"], ["last"]),
    node("Slice", ["last", "zero1", "one"], ["last1"]), node("Concat", ["n1", "two1", "last1"], ["shape"], axis=0),
    node("Reshape", ["x", "shape"], ["y"])],
     [("x", F, [3, 4, 2])], [("y", F, [3, 2, 4])],
     inits={"zero": np.int64(0), "axes": np.array([0], np.int64), "one": np.array([1], np.int64),
            "three": np.array([3], np.int64), "four": np.array([4], np.int64), "two": np.array([2], np.int64),
            "minus": np.array([-1], np.int64), "zero1": np.array([0], np.int64), "two1": np.array([2], np.int64)})
# The Shape of a tensor with a dynamic size: the static sizes it reads still fold.
case("fold_shape_partial", [
    node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["c"]), node("Unsqueeze", ["c", "axes"], ["c1"]),
    node("Concat", ["minus", "c1"], ["shape"], axis=0), node("Reshape", ["x", "shape"], ["y"])],
     [("x", F, ["N", 2, 3])], [("y", F, ["M", 2])],
     inits={"one": np.int64(1), "axes": np.array([0], np.int64), "minus": np.array([-1], np.int64)},
     feeds={"x": f32(4, 2, 3, seed=17)})
# The chains PyTorch writes for `x.view(x.size(0), -1)` with a dynamic batch: the batch,
# sliced or gathered from the Shape (through Cast, Squeeze and Unsqueeze), stays a run-time
# size that Reshape keeps (0); in `w.view(x.size(0), 12)` it is another tensor's size, which
# Reshape infers (-1). Run at batch 2 and 5.
case("fold_shape_dynamic_batch", [
    node("Shape", ["x"], ["s"]), node("Slice", ["s", "zero1", "one"], ["n"]), node("Cast", ["n"], ["n64"], to=I64),
    node("Concat", ["n64", "minus"], ["shape"], axis=0), node("Reshape", ["x", "shape"], ["y"]),
    node("Gather", ["s", "zero"], ["g"]), node("Unsqueeze", ["g", "axes"], ["g1"]), node("Squeeze", ["g1", "axes"], ["g0"]),
    node("Unsqueeze", ["g0", "axes"], ["g2"]), node("Concat", ["g2", "twelve"], ["shape2"], axis=0),
    node("Reshape", ["w", "shape2"], ["z"])],
     [("x", F, ["N", 3, 4]), ("w", F, ["M", 6])], [("y", F, ["N", 12]), ("z", F, ["N", 12])],
     inits={"zero": np.int64(0), "zero1": np.array([0], np.int64), "one": np.array([1], np.int64),
            "minus": np.array([-1], np.int64), "axes": np.array([0], np.int64), "twelve": np.array([12], np.int64)},
     feeds={"x": f32(2, 3, 4, seed=20), "w": f32(4, 6, seed=21)}, also=[{"x": f32(5, 3, 4, seed=22), "w": f32(10, 6, seed=23)}])

# Scan: a running sum (state) and its doubles (scan output) over the rows of x; then two scan
# inputs read along axis 1 (one from the end), scan outputs reversed and along axis 1.
case("op_scan", [node("Scan", ["s0", "x"], ["s", "ys"], num_scan_inputs=1, body=helper.make_graph(
    [node("Add", ["s_in", "x_t"], ["s_out"]), node("Mul", ["s_out", "two"], ["y_t"])], "scan_body",
    [helper.make_tensor_value_info("s_in", F, [2]), helper.make_tensor_value_info("x_t", F, [2])],
    [helper.make_tensor_value_info("s_out", F, [2]), helper.make_tensor_value_info("y_t", F, [2])],
    [numpy_helper.from_array(np.float32(2.0), "two")]))],
     [("s0", F, [2]), ("x", F, [4, 2])], [("s", F, [2]), ("ys", F, [4, 2])])
case("op_scan_axes_directions", [node("Scan", ["s0", "a", "b"], ["s", "ya", "yb"], num_scan_inputs=2,
                                      scan_input_axes=[1, 1], scan_input_directions=[0, 1],
                                      scan_output_axes=[1, 0], scan_output_directions=[1, 0],
                                      body=helper.make_graph(
    [node("Mul", ["a_t", "b_t"], ["p"]), node("Add", ["s_in", "p"], ["s_out"]), node("Sub", ["s_out", "a_t"], ["d"])],
    "scan_body2",
    [helper.make_tensor_value_info(n, F, [2]) for n in ["s_in", "a_t", "b_t"]],
    [helper.make_tensor_value_info(n, F, [2]) for n in ["s_out", "d", "p"]]))],
     [("s0", F, [2]), ("a", F, [2, 3]), ("b", F, [2, 3])], [("s", F, [2]), ("ya", F, [2, 3]), ("yb", F, [3, 2])])
# Sequences (the prelude's List): built, inserted into (at the end and at a position), read,
# measured, concatenated, split.
case("op_sequence", [node("SequenceConstruct", ["a", "b"], ["s1"]), node("SequenceInsert", ["s1", "c"], ["s2"]),
                     node("SequenceInsert", ["s2", "a", "minus1"], ["s3"]), node("SequenceAt", ["s3", "two"], ["y"]),
                     node("SequenceLength", ["s3"], ["n"]), node("ConcatFromSequence", ["s2"], ["cat"], axis=1)],
     [("a", F, [2, 3]), ("b", F, [2, 3]), ("c", F, [2, 3])], [("y", F, [2, 3]), ("n", I64, []), ("cat", F, [2, 9])],
     inits={"minus1": np.int64(-1), "two": np.array(2, dtype=np.int64)})
case("op_sequence_split", [node("SplitToSequence", ["x"], ["rows"], axis=0, keepdims=0),
                           node("ConcatFromSequence", ["rows"], ["t"], axis=1, new_axis=1),
                           node("SplitToSequence", ["x", "sizes"], ["parts"]), node("SequenceAt", ["parts", "last"], ["tail"]),
                           node("SequenceEmpty", [], ["e"]), node("SequenceInsert", ["e", "x"], ["one"]),
                           node("SequenceLength", ["one"], ["n"])],
     [("x", F, [4, 3])], [("t", F, [3, 4]), ("tail", F, [3, 3]), ("n", I64, [])],
     inits={"sizes": np.array([1, 3], dtype=np.int64), "last": np.int64(-1)})

# Recurrent operators over a static sequence (T=3, batch 2, input 4, hidden 5).
def recurrent_case(name, op, gates, directions=1, outputs=("y", "y_h"), initial=False, bias=True, peepholes=False,
                   lens=None, layout=0, dynamic=False, dynamic_batch=False, **attrs):
    d, h = directions, 5
    inits = {"w": f32(d, gates * h, 4, seed=10) * 0.5, "r": f32(d, gates * h, h, seed=11) * 0.5}
    names = ["x", "w", "r", "b" if bias else ""] + (["lens" if lens else ""] if lens or initial or peepholes else [])
    if bias:
        inits["b"] = f32(d, 2 * gates * h, seed=12) * 0.5
    if lens:
        inits["lens"] = np.array(lens, dtype=np.int32)
    state = [2, d, h] if layout else [d, 2, h]
    if initial:
        names += ["h0"] + (["c0"] if op == "LSTM" else [])
        inits["h0"] = f32(*state, seed=13)
        if op == "LSTM":
            inits["c0"] = f32(*state, seed=14)
    if peepholes:
        names += [""] * (7 - len(names)) + ["p"]
        inits["p"] = f32(d, 3 * h, seed=15)
    shapes = {"y": [2, 3, d, h] if layout else [3, d, 2, h], "y_h": state, "y_c": state}
    reference = None
    if layout:
        # onnxruntime has no `layout` 1: the reference is the layout-0 node on transposed
        # operands, its outputs transposed back.
        swapped = {k: v.transpose(1, 0, 2) if k in ("h0", "c0") else v for k, v in inits.items()}
        plain = make_model(name, [node(op, names, list(outputs), hidden_size=h, **attrs)], [("x", F, ["T", "N", 4])],
                           [(o, F, ["T", d, "N", h] if o == "y" else [d, "N", h]) for o in outputs if o], swapped, 17)
        back = {"y": (2, 0, 1, 3), "y_h": (1, 0, 2), "y_c": (1, 0, 2)}
        reference = lambda arrays: [  # noqa: E731
            y.transpose(back[o]) for o, y in zip([o for o in outputs if o],
                                                 onnxruntime(plain, {"x": arrays["x"].transpose(1, 0, 2)}))]
        attrs["layout"] = 1
    x_shape = [2, 3, 4] if layout else [3, 2, 4]
    feeds = None
    if dynamic:
        # The sequence length is a `dim_param`: the importer loops instead of unrolling.
        feeds = {"x": f32(*x_shape, seed=16)}
        x_shape[1 if layout else 0] = "T"
        shapes["y"][1 if layout else 0] = "T"
    also = []
    if dynamic_batch:
        # The batch is a `dim_param` too (no initial states or lengths, which would fix it):
        # runs at batch 2 and 3 (and 4 steps if the sequence is dynamic).
        b, t = (0, 1) if layout else (1, 0)
        concrete = [2, 3, 4] if layout else [3, 2, 4]
        feeds = {"x": f32(*concrete, seed=17)}
        concrete[b] = 3
        concrete[t] = 4 if dynamic else 3
        also = [{"x": f32(*concrete, seed=18)}]
        x_shape[b] = "N"
        shapes["y"][0 if layout else 2] = "N"
        state[0 if layout else 1] = "N"
    case(name, [node(op, names, list(outputs), hidden_size=h, **attrs)], [("x", F, x_shape)],
         [(o, F, shapes[o]) for o in outputs if o], inits=inits, reference=reference, feeds=feeds, also=also)


recurrent_case("op_rnn", "RNN", 1)
recurrent_case("op_rnn_bidirectional_relu", "RNN", 1, directions=2, direction="bidirectional", activations=["Relu", "Tanh"],
               initial=True)
recurrent_case("op_gru", "GRU", 3, bias=False)
recurrent_case("op_gru_linear_before_reset_reverse", "GRU", 3, direction="reverse", linear_before_reset=1, initial=True)
recurrent_case("op_gru_bidirectional", "GRU", 3, directions=2, direction="bidirectional")
recurrent_case("op_lstm", "LSTM", 4, outputs=("y", "y_h", "y_c"))
recurrent_case("op_lstm_bidirectional_initial", "LSTM", 4, directions=2, direction="bidirectional",
               outputs=("y", "y_h", "y_c"), initial=True)
recurrent_case("op_lstm_clip_last_state_only", "LSTM", 4, outputs=("", "y_h"), clip=0.5)
recurrent_case("op_lstm_peepholes", "LSTM", 4, outputs=("y", "y_h", "y_c"), peepholes=True, initial=True)
recurrent_case("op_lstm_sequence_lens_bidirectional", "LSTM", 4, directions=2, direction="bidirectional",
               outputs=("y", "y_h", "y_c"), lens=[3, 1], initial=True)
recurrent_case("op_lstm_layout1_peepholes_lens", "LSTM", 4, outputs=("y", "y_h", "y_c"), layout=1, peepholes=True,
               lens=[2, 3], initial=True)
recurrent_case("op_gru_layout1_bidirectional", "GRU", 3, directions=2, direction="bidirectional", layout=1, initial=True)
recurrent_case("op_gru_sequence_lens_reverse", "GRU", 3, direction="reverse", lens=[1, 3])
recurrent_case("op_rnn_layout1_sequence_lens", "RNN", 1, layout=1, lens=[2, 1], initial=True)
recurrent_case("op_lstm_dynamic_bidirectional_peepholes", "LSTM", 4, directions=2, direction="bidirectional",
               outputs=("y", "y_h", "y_c"), peepholes=True, initial=True, dynamic=True)
recurrent_case("op_gru_dynamic_reverse_lens", "GRU", 3, direction="reverse", lens=[2, 3], dynamic=True)
recurrent_case("op_rnn_dynamic_layout1_lens", "RNN", 1, layout=1, lens=[3, 1], initial=True, dynamic=True)
# The other activation functions, their alphas and betas taken in order as each needs them
# (LeakyRelu and HardSigmoid also by default), with clip; unrolled and looped.
recurrent_case("op_gru_activations_alpha_beta", "GRU", 3, directions=2, direction="bidirectional",
               activations=["HardSigmoid", "Softsign", "LeakyRelu", "ScaledTanh"], activation_alpha=[0.3, 0.05, 0.8],
               activation_beta=[0.45, 1.2])
recurrent_case("op_rnn_activations_elu_softplus", "RNN", 1, directions=2, direction="bidirectional",
               activations=["Elu", "Softplus"], activation_alpha=[0.7], dynamic=True)
recurrent_case("op_lstm_activations_affine_thresholded", "LSTM", 4, outputs=("y", "y_h", "y_c"),
               activations=["HardSigmoid", "Affine", "ThresholdedRelu"], activation_alpha=[0.25, 0.5, 0.1],
               activation_beta=[0.55, 0.2], clip=2.0)
recurrent_case("op_lstm_input_forget_peepholes", "LSTM", 4, outputs=("y", "y_h", "y_c"), peepholes=True, initial=True,
               input_forget=1)
recurrent_case("op_gru_activations_defaults", "GRU", 3, activations=["HardSigmoid", "LeakyRelu"])
# A sequence of length 0 with initial states: its final states are zeros in onnxruntime
# (all three operators, both directions, unrolled and looped).
recurrent_case("op_lstm_sequence_lens_zero_initial", "LSTM", 4, outputs=("y", "y_h", "y_c"), lens=[0, 3], initial=True)
recurrent_case("op_gru_sequence_lens_zero_reverse", "GRU", 3, direction="reverse", lens=[2, 0], initial=True)
recurrent_case("op_rnn_sequence_lens_zero_dynamic", "RNN", 1, directions=2, direction="bidirectional", lens=[0, 2],
               initial=True, dynamic=True)
recurrent_case("op_lstm_dynamic_batch_bidirectional", "LSTM", 4, directions=2, direction="bidirectional",
               outputs=("y", "y_h", "y_c"), peepholes=True, dynamic_batch=True)
recurrent_case("op_gru_dynamic_batch_steps_reverse", "GRU", 3, direction="reverse", dynamic=True, dynamic_batch=True)
recurrent_case("op_rnn_dynamic_batch_layout1", "RNN", 1, layout=1, dynamic_batch=True)


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for c in CASES:
        name = c[0]
        model, doc = build(*c)
        onnx_path, json_path = HERE / f"{name}.onnx", HERE / f"{name}.json"
        if check:
            old = json.loads(json_path.read_text()) if json_path.exists() else None
            if (not onnx_path.exists() or onnx_path.read_bytes() != model or old is None
                    or not same_runs(old, doc)
                    or len(old.get("also", [])) != len(doc.get("also", []))
                    or not all(same_runs(a, b) for a, b in zip(old.get("also", []), doc.get("also", [])))):
                stale.append(name)
        else:
            onnx_path.write_bytes(model)
            json_path.write_text(json.dumps(doc) + "\n")
    if stale:
        print("tests/onnx is stale (rerun make_models.py):", ", ".join(stale), file=sys.stderr)
        sys.exit(1)
    print(f"{len(CASES)} models {'checked' if check else 'written'}")


if __name__ == "__main__":
    main()
