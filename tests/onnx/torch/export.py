#!/usr/bin/env python3
"""Exports the importer's PyTorch test models (issue #18's NLP list) to ONNX, with seeded
random weights, seeded inputs, and the outputs of PyTorch and onnxruntime (tests/onnx.rs).

Models (eval mode, weights inside the file, TorchScript exporter, opset 17):
    lstm         nn.LSTM, 2 layers, batch_first, with a Linear head on the last step
    lstm_dynamic the same with the sequence length a dynamic axis (the importer loops)
    gru          nn.GRU, 2 layers, bidirectional, with a Linear head on every step
    transformer  nn.TransformerEncoderLayer (d_model 32, 2 heads, batch_first, GELU)
    scripted     a torch.jit.script'ed module: a data-dependent `while` loop and an `if`
    vgg11_narrow torchvision's VGG-11 (configuration "A": its layer sequence, adaptive average
                 pooling and three-layer classifier) at 1/16 of its widths on a 3x32x32
                 input, so pooled to 1x1 rather than 7x7: the full model's weights (507 MB)
                 and input are too large to commit
    gru_dynamic_batch the GRU with the batch a dynamic axis, checked at batch 2 and 3
For each NAME it writes NAME.onnx and NAME.json next to this script:
{"inputs": {input name: tensor}, "outputs": [onnxruntime's tensors], "torch": [PyTorch's]},
a tensor being {"dtype", "shape", "data" (flat)} as in tests/onnx/*.json, and for a model
with dynamic axes "also": [the same for inputs of other sizes]. It checks that
onnxruntime and PyTorch agree within 1e-4 relative (plus 1e-5 absolute) before writing.

    /work/torchvenv/bin/python tests/onnx/torch/export.py [NAME...]
Needs torch, onnx, onnxruntime and numpy; CI does not run it (the files are committed).
"""
import json
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch

HERE = pathlib.Path(__file__).resolve().parent


class Lstm(torch.nn.Module):
    """A sequence classifier: a 2-layer LSTM over batch-first input, a Linear head on the
    last step's hidden state."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y[:, -1])


class Gru(torch.nn.Module):
    """A sequence tagger: a 2-layer bidirectional GRU, a Linear head on every step."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(8, 12, num_layers=2, bidirectional=True)
        self.head = torch.nn.Linear(24, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


class Transformer(torch.nn.Module):
    """One post-norm encoder layer with GELU (exports Erf), no dropout."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            32, 2, dim_feedforward=64, dropout=0.0, activation="gelu", batch_first=True)

    def forward(self, x):
        return self.layer(x)


class Scripted(torch.nn.Module):
    """Doubles `x` while its sum is below a bound (how often depends on the data), then
    shifts it one way or the other depending on its mean."""

    def forward(self, x):
        steps = torch.zeros([], dtype=torch.int64)
        while bool(x.abs().sum() < 100.0):
            x = x * 2.0 + 0.5
            steps = steps + 1
        if bool(x.mean() > 0.0):
            y = x - steps.to(torch.float32)
        else:
            y = x + 1.0
        return y


def vgg11_narrow():
    """torchvision's VGG class with configuration "A" (VGG-11) at 1/16 of its widths."""
    from torchvision.models import vgg
    widths = [c if c == "M" else c // 16 for c in vgg.cfgs["A"]]
    model = vgg.VGG(vgg.make_layers(widths), num_classes=10)
    model.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
    model.classifier = torch.nn.Sequential(
        torch.nn.Linear(32, 256), torch.nn.ReLU(True), torch.nn.Dropout(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(True), torch.nn.Dropout(), torch.nn.Linear(256, 10))
    return model


# name -> (constructor, input shapes, whether to torch.jit.script it, dynamic axes)
MODELS = {
    "lstm": (Lstm, [(2, 5, 8)], False, None),
    "lstm_dynamic": (Lstm, [(2, 5, 8)], False, {"input": {1: "steps"}}),
    "gru": (Gru, [(6, 2, 8)], False, None),
    "transformer": (Transformer, [(2, 7, 32)], False, None),
    "scripted": (Scripted, [(3, 4)], True, None),
    "vgg11_narrow": (vgg11_narrow, [(1, 3, 32, 32)], False, None),
    "gru_dynamic_batch": (Gru, [(6, 2, 8)], False, {"input": {1: "batch"}}),
}
# Further runs of a model: the input shapes of each (its dynamic axes at other sizes).
ALSO = {"gru_dynamic_batch": [[(6, 3, 8)]]}


def close(ours, reference):
    """The project's tolerance: 1e-4 relative per element, 1e-5 absolute near zero."""
    return bool(np.all(np.abs(ours - reference) <= 1e-4 * np.abs(reference) + 1e-5))


def tensor(a):
    a = np.asarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.reshape(-1).tolist()}


def export(name):
    make, shapes, script, dynamic = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    r = np.random.default_rng(0)
    xs = [r.standard_normal(s).astype(np.float32) for s in shapes]
    names = [f"input{i}" if len(xs) > 1 else "input" for i in range(len(xs))]
    path = HERE / f"{name}.onnx"
    exported = torch.jit.script(model) if script else model
    torch.onnx.export(exported, tuple(torch.from_numpy(x) for x in xs), str(path), input_names=names,
                      output_names=["output"], opset_version=17, dynamo=False, dynamic_axes=dynamic)
    onnx.checker.check_model(str(path))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run(xs):
        with torch.no_grad():
            expected = model(*[torch.from_numpy(x) for x in xs])
        expected = [expected.numpy()] if isinstance(expected, torch.Tensor) else [e.numpy() for e in expected]
        got = session.run(None, dict(zip(names, xs)))
        for g, e in zip(got, expected):
            assert close(g, e), f"{name}: onnxruntime and PyTorch differ by up to {np.max(np.abs(g - e)):.2e}"
        return {"inputs": {n: tensor(x) for n, x in zip(names, xs)}, "outputs": [tensor(g) for g in got],
                "torch": [tensor(e) for e in expected]}

    doc = run(xs)
    if name in ALSO:
        doc["also"] = [run([r.standard_normal(s).astype(np.float32) for s in more]) for more in ALSO[name]]
    path.with_suffix(".json").write_text(json.dumps(doc) + "\n")
    ops = sorted({n.op_type for n in onnx.load(str(path)).graph.node})
    print(f"{name}: {path.stat().st_size / 1024:.0f} KiB, ops {' '.join(ops)}")


if __name__ == "__main__":
    for name in sys.argv[1:] or MODELS:
        export(name)
