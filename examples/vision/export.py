#!/usr/bin/env python3
"""Exports the Relay paper's vision models (§5) from PyTorch to ONNX, with seeded random
weights, one seeded input and the reference outputs of PyTorch and onnxruntime.

Models (batch 1, eval mode): torchvision's ResNet-18, MobileNet-v2, VGG-16 and SqueezeNet 1.1
(`weights=None`, 3x224x224 input; batch norms calibrated on seeded random batches) and the DQN of Mnih et al. (Nature 2015: 4x84x84 frames to
18 action values). Each is exported with `torch.onnx.export` (TorchScript exporter, opset 17,
weights inside the file). For each model NAME it writes

    NAME.onnx              into this folder if it is small (DQN, SqueezeNet, MobileNet-v2),
                           else into models/ (git-ignored: ResNet-18 47 MB, VGG-16 528 MB)
    NAME.ref.safetensors   next to NAME.onnx: `input` (the graph input, named as in the
                           graph), `torch` (PyTorch's output) and `onnxruntime` (onnxruntime's
                           output on one thread)

The input is drawn with numpy's default_rng(0) (standard normal, float32) so that scripts
without torch can redraw it. Before writing, it checks that onnxruntime and PyTorch agree
within 1e-4 relative (plus 1e-5 absolute, for elements near zero).

    python examples/vision/export.py            all models
    python examples/vision/export.py dqn vgg16  some of them
Needs torch, torchvision, onnx, onnxruntime, numpy and safetensors.
"""
import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torchvision
from safetensors.numpy import save_file

HERE = pathlib.Path(__file__).resolve().parent
# Files larger than this stay out of git (models/ is in .gitignore).
COMMIT_LIMIT = 15 * 1024 * 1024
INPUT_NAME = "input"


class DQN(torch.nn.Module):
    """The Nature DQN (Mnih et al. 2015): three convolutions and two dense layers."""

    def __init__(self, actions=18):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(4, 32, 8, stride=4), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 4, stride=2), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 64, 3, stride=1), torch.nn.ReLU(),
            torch.nn.Flatten(),
        )
        self.head = torch.nn.Sequential(
            torch.nn.Linear(64 * 7 * 7, 512), torch.nn.ReLU(), torch.nn.Linear(512, actions)
        )

    def forward(self, x):
        return self.head(self.features(x))


# name -> (constructor, input shape)
MODELS = {
    "dqn": (DQN, (1, 4, 84, 84)),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(weights=None), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(weights=None), (1, 3, 224, 224)),
    "resnet18": (lambda: torchvision.models.resnet18(weights=None), (1, 3, 224, 224)),
    "vgg16": (lambda: torchvision.models.vgg16(weights=None), (1, 3, 224, 224)),
}


def close(ours, reference):
    """The project's tolerance (tests/onnx.rs, tests/vision.rs): 1e-4 relative per element,
    with an absolute floor of 1e-5 for elements near zero."""
    return bool(np.all(np.abs(ours - reference) <= 1e-4 * np.abs(reference) + 1e-5))


def calibrate(model, shape):
    """Sets batch norms' running statistics from seeded random batches. Freshly initialised
    ones (mean 0, variance 1) let MobileNet-v2's activations shrink to 1e-9 at the output,
    too small for a relative check; calibrated, every layer's output is of order one, and the
    statistics that SimplifyInference folds into the convolutions are no longer trivial."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if not norms:
        return
    for m in norms:
        m.momentum = None  # a cumulative average over the calibration batches
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn((8,) + shape[1:]))


def export(name):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    model = make()
    calibrate(model, shape)
    model.eval()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        expected = model(torch.from_numpy(x)).numpy()
    scratch = HERE / "models" / f"{name}.onnx"
    scratch.parent.mkdir(exist_ok=True)
    torch.onnx.export(
        model, (torch.from_numpy(x),), str(scratch), input_names=[INPUT_NAME],
        output_names=["output"], opset_version=17, dynamo=False,
    )
    onnx.checker.check_model(str(scratch))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(scratch), options, providers=["CPUExecutionProvider"])
    got = session.run(None, {INPUT_NAME: x})[0]
    worst = np.max(np.abs(got - expected))
    assert close(got, expected), f"{name}: onnxruntime and PyTorch differ by up to {worst:.2e}"
    size = scratch.stat().st_size
    path = scratch
    if size <= COMMIT_LIMIT:
        path = HERE / f"{name}.onnx"
        scratch.replace(path)
    save_file({INPUT_NAME: x, "torch": expected, "onnxruntime": got}, str(path.with_suffix(".ref.safetensors")))
    print(f"{name}: {path.relative_to(HERE)} ({size / 2**20:.1f} MiB), output {list(expected.shape)}, "
          f"|onnxruntime - PyTorch| <= {worst:.1e} (|PyTorch| <= {np.abs(expected).max():.2f})")


if __name__ == "__main__":
    for name in sys.argv[1:] or MODELS:
        export(name)
