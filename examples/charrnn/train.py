"""Trains the character-level name generator of PyTorch's tutorial "NLP From Scratch:
Generating Names with a Character-Level RNN" and writes what charrnn.relay and its parity test
read.

    python examples/charrnn/train.py [--data DIR] [--iters N]

DIR holds one `<Language>.txt` file of surnames per category (default: data/names next to
this file). Names are folded to ASCII as in the tutorial (NFD, combining marks dropped,
letters outside the alphabet dropped). Categories are the file names in sorted order.

Writes, next to this file:
- weights.safetensors: i2h_weight [128, 205], i2h_bias [128], i2o_weight [59, 205],
  i2o_bias [59], o2o_weight [59, 187], o2o_bias [59] (float32; PyTorch's `i2h.weight` is
  `i2h_weight`, as Relay names have no dots).
- names.jsonl: for every category and start letter A-Z, the greedily generated name, one JSON
  object a line: {"args": [category_id, start_letter_id], "category": "...", "name": "..."}.
  `args` are the inputs of @main after the weights (the `relay-vm run --input` form).

Training follows the tutorial: 100,000 steps of one random (category, name) pair, loss the
sum of NLL over the name's letters, plain SGD with learning rate 0.0005, dropout 0.1.
"""

import argparse
import json
import os
import random
import string
import time
import unicodedata

import torch
import torch.nn as nn
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_LETTERS = string.ascii_letters + " .,;'-"
N_LETTERS = len(ALL_LETTERS) + 1  # plus end-of-name
EOS = N_LETTERS - 1
HIDDEN = 128
MAX_LENGTH = 20


def to_ascii(s):
    return "".join(
        c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn" and c in ALL_LETTERS
    )


def load(data_dir):
    files = sorted(f for f in os.listdir(data_dir) if f.endswith(".txt"))
    categories, names = [], {}
    for f in files:
        category = f[: -len(".txt")]
        with open(os.path.join(data_dir, f), encoding="utf-8") as text:
            names[category] = [to_ascii(line) for line in text.read().strip().split("\n")]
        categories.append(category)
    return categories, names


class RNN(nn.Module):
    """The tutorial's network."""

    def __init__(self, n_categories):
        super().__init__()
        self.i2h = nn.Linear(n_categories + N_LETTERS + HIDDEN, HIDDEN)
        self.i2o = nn.Linear(n_categories + N_LETTERS + HIDDEN, N_LETTERS)
        self.o2o = nn.Linear(HIDDEN + N_LETTERS, N_LETTERS)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, category, letter, hidden):
        input_combined = torch.cat((category, letter, hidden), 1)
        hidden = self.i2h(input_combined)
        output = self.i2o(input_combined)
        output = self.o2o(torch.cat((hidden, output), 1))
        return self.softmax(self.dropout(output)), hidden


def one_hot(index, size):
    t = torch.zeros(1, size)
    t[0, index] = 1.0
    return t


def sample(rnn, n_categories, category, start):
    """The tutorial's greedy `sample`: letter ids from `start` to end-of-name or 20 more."""
    with torch.no_grad():
        cat = one_hot(category, n_categories)
        letter, hidden, ids, gaps = start, torch.zeros(1, HIDDEN), [start], []
        for _ in range(MAX_LENGTH):
            output, hidden = rnn(cat, one_hot(letter, N_LETTERS), hidden)
            top2 = output[0].topk(2)
            gaps.append(float(top2.values[0] - top2.values[1]))
            letter = int(top2.indices[0])
            if letter == EOS:
                break
            ids.append(letter)
        return ids, min(gaps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(HERE, "data", "names"))
    ap.add_argument("--iters", type=int, default=100_000)
    ap.add_argument("--lr", type=float, default=0.0005)
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    random.seed(0)
    start_time = time.time()
    categories, names = load(args.data)
    n_categories = len(categories)
    rnn = RNN(n_categories)
    criterion = nn.NLLLoss()

    total = 0.0
    for it in range(1, args.iters + 1):
        category = random.randrange(n_categories)
        name = random.choice(names[categories[category]])
        ids = [ALL_LETTERS.index(c) for c in name]
        cat = one_hot(category, n_categories)
        hidden = torch.zeros(1, HIDDEN)
        rnn.zero_grad()
        loss = torch.zeros(())
        for letter, target in zip(ids, ids[1:] + [EOS]):
            output, hidden = rnn(cat, one_hot(letter, N_LETTERS), hidden)
            loss = loss + criterion(output, torch.tensor([target]))
        loss.backward()
        with torch.no_grad():
            for p in rnn.parameters():
                p.add_(p.grad, alpha=-args.lr)
        total += loss.item() / len(ids)
        if it % 10_000 == 0:
            print(f"step {it}: mean loss/letter {total / 10_000:.3f}, {time.time() - start_time:.0f} s", flush=True)
            total = 0.0

    rnn.eval()
    lines, smallest_gap = [], float("inf")
    for category, language in enumerate(categories):
        for start in string.ascii_uppercase:
            ids, gap = sample(rnn, n_categories, category, ALL_LETTERS.index(start))
            smallest_gap = min(smallest_gap, gap)
            name = "".join(ALL_LETTERS[i] for i in ids)
            lines.append(
                json.dumps({"args": [category, ids[0]], "category": language, "name": name}) + "\n"
            )
    print(f"{len(lines)} names; smallest gap between the two likeliest letters: {smallest_gap:.2e}")
    print("".join(lines[c * 26] for c in range(n_categories)), end="")

    weights = {
        f"{layer}_{kind}": getattr(getattr(rnn, layer), kind).detach().contiguous()
        for layer in ("i2h", "i2o", "o2o")
        for kind in ("weight", "bias")
    }
    save_file(weights, os.path.join(args.out, "weights.safetensors"))
    with open(os.path.join(args.out, "names.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    print(f"{time.time() - start_time:.0f} s")


if __name__ == "__main__":
    main()
