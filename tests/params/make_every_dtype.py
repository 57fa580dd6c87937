"""Writes every_dtype.safetensors: one small tensor of each dtype `--params` reads, with the
`safetensors` Python package (through PyTorch, whose state dicts hold bfloat16 tensors).

Run with /work/torchvenv/bin/python from this directory; tests/params.rs reads the file.
"""

import torch
from safetensors.torch import save_file

# Values each dtype holds exactly, with a negative one where the dtype is signed.
tensors = {
    "f16": torch.tensor([1.5, -2.0, 65504.0], dtype=torch.float16),
    "bf16": torch.tensor([0.5, -3.0, 1e38], dtype=torch.bfloat16),
    "f32": torch.tensor([0.25, -1.0, 3.0], dtype=torch.float32),
    "f64": torch.tensor([0.125, -1.0, 1e300], dtype=torch.float64),
    "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
    "u8": torch.tensor([0, 1, 255], dtype=torch.uint8),
    "i16": torch.tensor([-32768, 2, 32767], dtype=torch.int16),
    "i32": torch.tensor([-7, 0, 7], dtype=torch.int32),
    "i64": torch.tensor([-(2**40), 0, 2**40], dtype=torch.int64),
    "u32": torch.tensor([0, 1, 2**32 - 1], dtype=torch.uint32),
    "flag": torch.tensor([True, False, True], dtype=torch.bool),
}
save_file(tensors, "every_dtype.safetensors")
