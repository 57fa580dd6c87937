"""Writes generated weights and inputs for convnet.relay (standard library only):

    python examples/convnet/gen.py

- weights.safetensors: conv1..conv3 weights (OIHW) and biases, fc weight and bias; values
  from a fixed linear congruential generator, uniform in +-1/sqrt(fan-in) like PyTorch's
  default initialisation, rounded to multiples of 1/1024 so their decimal text is exact.
- inputs.jsonl: 8 images, `{"args": [IMAGE]}` with IMAGE a [1, 3, 32, 32] nested list of
  multiples of 1/64 in [-1, 1).
"""

import json
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
STATE = [20261122]


def uniform():
    """The next number in [0, 1)."""
    STATE[0] = (STATE[0] * 6364136223846793005 + 1442695040888963407) % 2**64
    return (STATE[0] >> 11) / 2**53


def tensor(shape, fan_in):
    bound = 1 / math.sqrt(fan_in)
    n = math.prod(shape)
    return shape, [round((2 * uniform() - 1) * bound * 1024) / 1024 for _ in range(n)]


def save_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, (shape, data) in tensors.items():
        blob = struct.pack(f"<{len(data)}f", *data)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def nested(data, shape):
    if len(shape) == 1:
        return data
    step = len(data) // shape[0]
    return [nested(data[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def main():
    weights = {}
    for i, (cin, cout) in enumerate([(3, 16), (16, 32), (32, 64)], start=1):
        weights[f"conv{i}_weight"] = tensor([cout, cin, 3, 3], cin * 9)
        weights[f"conv{i}_bias"] = tensor([cout], cin * 9)
    weights["fc_weight"] = tensor([10, 64], 64)
    weights["fc_bias"] = tensor([10], 64)
    save_safetensors(os.path.join(HERE, "weights.safetensors"), weights)
    with open(os.path.join(HERE, "inputs.jsonl"), "w") as f:
        for _ in range(8):
            image = [math.floor((2 * uniform() - 1) * 64) / 64 for _ in range(3 * 32 * 32)]
            f.write(json.dumps({"args": [nested(image, [1, 3, 32, 32])]}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
