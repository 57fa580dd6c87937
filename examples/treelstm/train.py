"""Trains the Child-Sum Tree-LSTM of treelstm.relay on the Stanford Sentiment Treebank and
writes everything the Relay example and its parity test read.

    python examples/treelstm/train.py [--data DIR] [--epochs N]

DIR holds SST's train.txt, dev.txt and test.txt (PTB-bracketed trees, the standard
8544/1101/2210 split; default ../shared/data/sst from the repository root). Writes, next to
this file:

- vocab.txt: one token per line, the line number (from 0) is the word id; line 0 is <unk>.
  Tokens are SST's, lowercased; a word is in the vocabulary when it occurs at least twice in
  train.txt, most frequent first (ties alphabetically).
- weights.safetensors: the parameters of @main, by name (float32).
- reference.safetensors: for every test sentence, in file order, the root logits
  `logits` F32[2210, 5] and the predicted class `predicted` I32[2210] of the final model;
  metadata: dev/test accuracy as `dev_correct`, `dev_total`, `test_correct`, `test_total`.

Training: cross-entropy over the labels of all nodes of each tree (Tai et al. 2015), Adam,
mini-batches of trees evaluated level by level (all nodes of equal height at once), dropout on
the hidden states fed to the classifier (training only; the Relay model is the inference
network). The epoch with the best dev root accuracy is kept. One CPU thread.
"""

import argparse
import collections
import copy
import os
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

EMBED, MEMORY, CLASSES = 300, 150, 5
UNK = "<unk>"
HERE = os.path.dirname(os.path.abspath(__file__))


class Node:
    __slots__ = ("label", "word", "children")

    def __init__(self, label, word, children):
        self.label, self.word, self.children = label, word, children


def parse_tree(line):
    """A PTB-bracketed SST tree: `(label word)` leaves, `(label child child ...)` nodes.

    Words are the text between the label's single space and the closing parenthesis (one SST
    token holds a non-breaking space, so no whitespace splitting)."""
    stack, root, i = [], None, 0
    while i < len(line):
        ch = line[i]
        if ch == "(":
            j = line.index(" ", i)
            node = Node(int(line[i + 1 : j]), None, [])
            if stack:
                stack[-1].children.append(node)
            stack.append(node)
            i = j + 1
            if line[i] != "(":
                k = line.index(")", i)
                node.word = line[i:k].lower()
                i = k
        elif ch == ")":
            root = stack.pop()
            i += 1
        else:
            i += 1
    assert not stack and root is not None, line
    return root


def load(path):
    with open(path, encoding="utf-8") as f:
        return [parse_tree(line.rstrip("\n")) for line in f if line.strip()]


def postorder(root):
    out, stack = [], [(root, False)]
    while stack:
        node, seen = stack.pop()
        if seen or not node.children:
            out.append(node)
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children))
    return out


def build_vocab(trees):
    counts = collections.Counter(n.word for t in trees for n in postorder(t) if n.word is not None)
    words = sorted((w for w, k in counts.items() if k >= 2), key=lambda w: (-counts[w], w))
    return [UNK] + words


class Batch:
    """A set of trees flattened into levels: level 0 holds every leaf, level k every internal
    node whose highest child is at level k - 1. Node states live in one sequence of per-level
    tensors; `child_index[k]` indexes the concatenation of levels below k."""

    def __init__(self, trees, word_id):
        levels = collections.defaultdict(list)
        height, roots = {}, []
        for t in trees:
            for n in postorder(t):
                height[id(n)] = 1 + max(height[id(c)] for c in n.children) if n.children else 0
                levels[height[id(n)]].append(n)
            roots.append(t)
        self.depth = max(levels) + 1
        position, offset = {}, 0
        self.words, self.labels, self.parent_of_child, self.child_index = None, [], [], []
        self.sizes = [len(levels[k]) for k in range(self.depth)]
        for k in range(self.depth):
            nodes = levels[k]
            if k == 0:
                self.words = torch.tensor([word_id.get(n.word, 0) for n in nodes])
                self.parent_of_child.append(None)
                self.child_index.append(None)
            else:
                parents = [p for p, n in enumerate(nodes) for _ in n.children]
                children = [position[id(c)] for n in nodes for c in n.children]
                self.parent_of_child.append(torch.tensor(parents))
                self.child_index.append(torch.tensor(children))
            for p, n in enumerate(nodes):
                position[id(n)] = offset + p
            offset += len(nodes)
            self.labels.extend(n.label for n in nodes)
        self.labels = torch.tensor(self.labels)
        self.roots = torch.tensor([position[id(t)] for t in roots])
        self.root_labels = torch.tensor([t.label for t in roots])


class TreeLSTM(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, EMBED)
        nn.init.normal_(self.embedding.weight, std=0.1)
        self.w_iou = nn.Linear(EMBED, 3 * MEMORY)  # its bias is b_iou
        self.u_iou = nn.Linear(MEMORY, 3 * MEMORY, bias=False)
        self.u_f = nn.Linear(MEMORY, MEMORY)
        self.out = nn.Linear(MEMORY, CLASSES)

    @staticmethod
    def cell(iou, fc):
        i, o, u = iou.chunk(3, dim=1)
        c = torch.sigmoid(i) * torch.tanh(u) + fc
        return c, torch.sigmoid(o) * torch.tanh(c)

    def states(self, batch):
        """h of every node of the batch, in level order."""
        x = self.embedding(batch.words)
        c, h = self.cell(self.w_iou(x), torch.zeros(len(batch.words), MEMORY))
        cs, hs = [c], [h]
        for k in range(1, batch.depth):
            all_c, all_h = torch.cat(cs), torch.cat(hs)
            parent, child = batch.parent_of_child[k], batch.child_index[k]
            n = batch.sizes[k]
            h_child, c_child = all_h[child], all_c[child]
            h_sum = torch.zeros(n, MEMORY).index_add(0, parent, h_child)
            fc = torch.zeros(n, MEMORY).index_add(0, parent, torch.sigmoid(self.u_f(h_child)) * c_child)
            iou = self.u_iou(h_sum) + self.w_iou.bias
            c, h = self.cell(iou, fc)
            cs.append(c)
            hs.append(h)
        return torch.cat(hs)

    def root_logits(self, batch):
        return self.out(self.states(batch)[batch.roots])

    def relay_params(self):
        """The tensors of treelstm.relay's @main, by parameter name."""
        t = lambda p: p.detach().contiguous().clone()
        return {
            "embedding": t(self.embedding.weight),
            "w_iou": t(self.w_iou.weight),
            "u_iou": t(self.u_iou.weight),
            "b_iou": t(self.w_iou.bias),
            "u_f": t(self.u_f.weight),
            "b_f": t(self.u_f.bias),
            "w_out": t(self.out.weight),
            "b_out": t(self.out.bias),
        }


def batches(trees, size, word_id):
    return [Batch(trees[i : i + size], word_id) for i in range(0, len(trees), size)]


def evaluate(model, eval_batches):
    """Root logits of every tree and the number of correct root predictions."""
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model.root_logits(b) for b in eval_batches])
        gold = torch.cat([b.root_labels for b in eval_batches])
    return logits, int((logits.argmax(1) == gold).sum())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "..", "shared", "data", "sst"))
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=25)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    random.seed(0)
    start = time.time()

    train, dev, test = (load(os.path.join(args.data, f"{s}.txt")) for s in ("train", "dev", "test"))
    vocab = build_vocab(train)
    word_id = {w: i for i, w in enumerate(vocab)}
    print(f"train/dev/test {len(train)}/{len(dev)}/{len(test)} trees, vocabulary {len(vocab)}")

    model = TreeLSTM(len(vocab))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    dev_batches, test_batches = batches(dev, 256, word_id), batches(test, 256, word_id)
    best, best_dev = None, -1
    for epoch in range(1, args.epochs + 1):
        model.train()
        order = list(train)
        random.shuffle(order)
        total = 0.0
        for b in batches(order, args.batch, word_id):
            h = F.dropout(model.states(b), args.dropout, training=True)
            loss = F.cross_entropy(model.out(h), b.labels, reduction="sum") / len(b.roots)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(b.roots)
        _, dev_correct = evaluate(model, dev_batches)
        print(
            f"epoch {epoch}: loss/tree {total / len(train):.3f}, dev {dev_correct}/{len(dev)} "
            f"= {dev_correct / len(dev):.4f}, {time.time() - start:.0f} s",
            flush=True,
        )
        if dev_correct > best_dev:
            best_dev, best = dev_correct, copy.deepcopy(model.state_dict())

    model.load_state_dict(best)
    logits, test_correct = evaluate(model, test_batches)
    print(
        f"best dev {best_dev}/{len(dev)} = {best_dev / len(dev):.4f}; "
        f"test {test_correct}/{len(test)} = {test_correct / len(test):.4f}; "
        f"{time.time() - start:.0f} s"
    )
    top2 = logits.topk(2, dim=1).values
    print(f"smallest gap between the two highest test logits: {float((top2[:, 0] - top2[:, 1]).min()):.2e}")

    with open(os.path.join(args.out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(w + "\n" for w in vocab))
    save_file(model.relay_params(), os.path.join(args.out, "weights.safetensors"))
    metadata = {
        "dev_correct": str(best_dev),
        "dev_total": str(len(dev)),
        "test_correct": str(test_correct),
        "test_total": str(len(test)),
    }
    reference = {"logits": logits.float().contiguous(), "predicted": logits.argmax(1).to(torch.int32)}
    save_file(reference, os.path.join(args.out, "reference.safetensors"), metadata=metadata)


if __name__ == "__main__":
    main()
