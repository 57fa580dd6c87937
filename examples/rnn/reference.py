"""Writes seeded weights, inputs and PyTorch's final states for rnn.relay, gru.relay and
lstm.relay (torch.nn.RNNCell, GRUCell, LSTMCell; input 128, hidden 128).

    python examples/rnn/reference.py

Writes, next to this file:
- rnn.safetensors, gru.safetensors, lstm.safetensors: each cell's `weight_ih`, `weight_hh`,
  `bias_ih`, `bias_hh` (PyTorch's default initialisation after torch.manual_seed(0)).
- inputs.jsonl: one sequence a line, `{"args": [XS]}` with XS a List[Tensor[(1, 128),
  float32]] as Cons/Nil value JSON (the `relay-vm run --input` form). Lengths 0, 1, 5, 5, 5,
  16; values are multiples of 1/64 in [-2, 2), so their decimal text is exact.
- reference.safetensors: the final state from a zero state, F32[1, 128] each: `rnn.K`,
  `gru.K`, `lstm.K.h`, `lstm.K.c` for the sequence on line K (from 0) of inputs.jsonl.
"""

import json
import os

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = 128
LENGTHS = [0, 1, 5, 5, 5, 16]


def relay_list(items):
    """A Relay List value in JSON, as nested Cons cells."""
    out = {"con": "Nil", "fields": []}
    for item in reversed(items):
        out = {"con": "Cons", "fields": [item, out]}
    return out


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cells = {
        "rnn": torch.nn.RNNCell(SIZE, SIZE),
        "gru": torch.nn.GRUCell(SIZE, SIZE),
        "lstm": torch.nn.LSTMCell(SIZE, SIZE),
    }
    sequences = [torch.randint(-128, 128, (n, 1, SIZE)).float() / 64 for n in LENGTHS]

    reference = {}
    with torch.no_grad():
        for k, xs in enumerate(sequences):
            h = {name: torch.zeros(1, SIZE) for name in cells}
            c = torch.zeros(1, SIZE)
            for x in xs:
                h["rnn"] = cells["rnn"](x, h["rnn"])
                h["gru"] = cells["gru"](x, h["gru"])
                h["lstm"], c = cells["lstm"](x, (h["lstm"], c))
            reference[f"rnn.{k}"] = h["rnn"]
            reference[f"gru.{k}"] = h["gru"]
            reference[f"lstm.{k}.h"] = h["lstm"]
            reference[f"lstm.{k}.c"] = c

    for name, cell in cells.items():
        save_file({k: v.contiguous() for k, v in cell.state_dict().items()}, os.path.join(HERE, f"{name}.safetensors"))
    save_file({k: v.contiguous() for k, v in reference.items()}, os.path.join(HERE, "reference.safetensors"))
    with open(os.path.join(HERE, "inputs.jsonl"), "w", encoding="utf-8") as f:
        for xs in sequences:
            f.write(json.dumps({"args": [relay_list([x.tolist() for x in xs])]}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
