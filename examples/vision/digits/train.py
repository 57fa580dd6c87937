#!/usr/bin/env python3
"""Trains a small CNN on scikit-learn's handwritten digits (`load_digits`: 1,797 8x8 images,
ten classes) and exports it for relay-vm.

Split: 75 % train / 25 % test (`train_test_split(..., random_state=0, stratify=labels)`),
pixels scaled from 0..16 to 0..1. Network: conv 3x3 (1 -> 16, pad 1), ReLU, conv 3x3
(16 -> 32, pad 1), ReLU, max-pool 2x2, flatten (512), dense 64, ReLU, dense 10 (logits).
Adam (lr 0.001), batches of 32, 20 epochs, `torch.manual_seed(0)`, one thread.

Writes next to this script:
    digits.onnx    the trained model (opset 17), input `input` [1, 1, 8, 8] float32,
                   output the logits [1, 10]
    test.jsonl     the test set as `relay-vm run --input` lines:
                   {"args": [IMAGE], "label": DIGIT, "pytorch": PYTORCH'S PREDICTION}
and prints PyTorch's test accuracy in the form `relay-vm run --input` prints it.

    python examples/vision/digits/train.py
Needs torch, onnx, scikit-learn and numpy.
"""
import json
import pathlib

import numpy as np
import onnx
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

HERE = pathlib.Path(__file__).resolve().parent


def model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(32 * 4 * 4, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    )


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]  # [N, 1, 8, 8]
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.25, random_state=0, stratify=digits.target
    )
    net = model()
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    x_train, y_train = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for epoch in range(20):
        net.train()
        order = torch.randperm(len(x_train))
        for start in range(0, len(order), 32):
            batch = order[start:start + 32]
            loss = torch.nn.functional.cross_entropy(net(x_train[batch]), y_train[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    net.eval()
    with torch.no_grad():
        predicted = net(torch.from_numpy(x_test)).argmax(1).numpy()
    correct = int((predicted == y_test).sum())

    torch.onnx.export(
        net, (torch.from_numpy(x_test[:1]),), str(HERE / "digits.onnx"), input_names=["input"],
        output_names=["logits"], opset_version=17, dynamo=False,
    )
    onnx.checker.check_model(str(HERE / "digits.onnx"))
    with open(HERE / "test.jsonl", "w") as out:
        for image, label, guess in zip(x_test, y_test, predicted):
            line = {"args": [image[None].tolist()], "label": int(label), "pytorch": int(guess)}
            out.write(json.dumps(line, separators=(",", ":")) + "\n")
    print(f"accuracy: {correct}/{len(y_test)} = {100 * correct / len(y_test):.2f}% (PyTorch)")


if __name__ == "__main__":
    main()
