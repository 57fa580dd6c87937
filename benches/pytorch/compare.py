"""Times the example NLP models on relay-vm and on PyTorch (eager and TorchScript), with the
same weights on the same inputs, and prints one table of mean latencies per input.

    python benches/pytorch/compare.py [--warmup N] [--reps N] [--opt-level O] [-j N] [--models M,..]

Models (all from examples/): the Tree-LSTM on the SST test set, CharRNN greedy generation for
every (language, start letter) pair, and the RNN/GRU/LSTM cells folded over the shipped
sequences and over longer random ones. relay-vm runs through its Python package `relay_vm`
(`pip install ./python`), timed by the same harness as PyTorch, so its figures include the
package's call overhead as a Python user sees it; `--cli` times the release binary with
`relay-vm bench` instead (built with cargo when missing or with --build). Before any timing, every PyTorch
variant is checked against the reference outputs stored next to the models, so all variants
compute the same function as the Relay programs.

By default everything runs on one thread. With `-j N`, requests (inputs) run on N worker
threads at once, each running whole requests one at a time: relay-vm as N Python threads calling
the package (one VM per thread over one shared program, the GIL released while a VM runs), or
with `--cli` as `relay-vm bench -j N`, PyTorch as N Python threads calling the model
(intra-op threads stay 1; TorchScript releases the GIL inside a call, eager code holds it
between operators), and a second table gives throughput and the p99 latency per request. Each
timed call is one input (a sentence, a name, a sequence); inputs are converted to the runtime's
own values before timing, for every runtime. See README.md next to this file for how each
PyTorch variant is built.
"""

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import List, NamedTuple, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file

try:
    import relay_vm
except ImportError:  # --cli does without it
    relay_vm = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
SIZE = 128  # input and hidden size of the RNN/GRU/LSTM examples


def import_script(name, path):
    """Imports a training script as a module (they only define things at import time)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sst = import_script("treelstm_train", os.path.join(EXAMPLES, "treelstm", "train.py"))
charrnn = import_script("charrnn_train", os.path.join(EXAMPLES, "charrnn", "train.py"))


# ---------------------------------------------------------------------------------------------
# Timing


class Stats(NamedTuple):
    """Latency per request (seconds, mean and 99th percentile) and requests per second."""

    mean: float
    p99: float
    throughput: float


def percentile(samples, q):
    """The nearest-rank `q`-th percentile of `samples` (as `relay-vm bench` computes it)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, -(-q * len(ordered) // 100) - 1))]


def time_requests(run, inputs, warmup, reps, threads):
    """`Stats` of calls `run(x)` over `reps` passes of `inputs`, after `warmup` passes (the same
    protocol as `relay-vm bench`), with `threads` worker threads taking inputs in turn."""

    def timed(x):
        with torch.inference_mode():  # thread-local: each worker enters it
            start = time.perf_counter()
            run(x)
            return time.perf_counter() - start

    samples = []
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(warmup):
            list(pool.map(timed, inputs))
        started = time.perf_counter()
        for _ in range(reps):
            samples += pool.map(timed, inputs) if threads > 1 else map(timed, inputs)
        wall = time.perf_counter() - started
    return Stats(statistics.fmean(samples), percentile(samples, 99), len(samples) / wall)


def from_json(j):
    """A JSONL input value (the CLI's form) in the package's form, converted ahead of timing as
    every runtime's inputs are: numbers and nested lists of them become NumPy arrays (int32
    for integers, float32 otherwise, the examples' dtypes), `List` values Python lists, other
    constructor values `relay_vm.Adt`."""
    if isinstance(j, dict):
        fields = [from_json(f) for f in j.get("fields", [])]
        if j["con"] == "Nil":
            return []
        if j["con"] == "Cons":
            return [fields[0], *fields[1]]
        return relay_vm.Adt(j["con"], *fields)
    array = np.asarray(j)
    return array.astype(np.int32 if array.dtype.kind in "iu" else np.float32)


class RelayPackage:
    """relay-vm through its Python package: one compiled program per model, called from the
    harness's threads like the PyTorch variants."""

    def __init__(self, opt_level):
        self.opt_level = 2 if opt_level is None else int(opt_level)

    def bench(self, relay_file, params, input_file, warmup, reps, threads):
        """`Stats` per input line, timed by `time_requests`."""
        prog = relay_vm.compile(relay_file, params=params, opt_level=self.opt_level)
        with open(input_file, encoding="utf-8") as f:
            inputs = [tuple(from_json(a) for a in json.loads(line)["args"]) for line in f if line.strip()]
        return time_requests(lambda args: prog(*args), inputs, warmup, reps, threads)


class RelayVm:
    """The `relay-vm` release binary (`--cli`)."""

    def __init__(self, path, build, opt_level):
        self.path, self.opt_level = path, opt_level
        if build or not os.path.exists(path):
            print("building relay-vm (cargo build --release --bin relay-vm) ...", file=sys.stderr)
            subprocess.run(["cargo", "build", "--release", "--bin", "relay-vm"], cwd=ROOT, check=True)
        if opt_level is not None:
            usage = subprocess.run([path, "bench", "--help"], capture_output=True, text=True, check=True)
            if "--opt-level" not in usage.stdout:
                sys.exit(f"error: {path} has no --opt-level option")

    def bench(self, relay_file, params, input_file, warmup, reps, threads, batch=1):
        """`Stats` per input line, from `relay-vm bench -j threads --batch batch`."""
        command = [self.path, "bench", relay_file, "--params", params, "--input", input_file]
        command += ["--warmup", str(warmup), "--reps", str(reps), "-j", str(threads), "--batch", str(batch)]
        if self.opt_level is not None:
            command += ["--opt-level", self.opt_level]
        out = subprocess.run(command, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"error: {' '.join(command)} failed:\n{out.stderr}")
        mean = re.search(r"latency per input: mean ([0-9.]+) ms.* p99 ([0-9.]+) ms", out.stdout)
        throughput = re.search(r"throughput: ([0-9.]+) inputs/s", out.stdout)
        if mean is None or throughput is None:
            sys.exit(f"error: unexpected relay-vm bench output:\n{out.stdout}")
        return Stats(float(mean.group(1)) / 1e3, float(mean.group(2)) / 1e3, float(throughput.group(1)))


# ---------------------------------------------------------------------------------------------
# Tree-LSTM


class TreeLSTM(nn.Module):
    """treelstm.relay in PyTorch, with its parameters by @main name. `forward` takes a tree as
    flattened arrays in post-order (children before their parent, the root last): `words[i]`
    is node i's word id (leaves only) and `children[i]` the indices of its children. A node
    sums its children's h, and the forget gates of all its children come from one matrix
    product over their stacked h (so does the Relay program for two children, the only arity in
    SST)."""

    def __init__(self, params):
        super().__init__()
        for name, tensor in params.items():
            self.register_buffer(name, tensor)

    @torch.jit.export
    def leaf(self, word: int) -> Tuple[torch.Tensor, torch.Tensor]:
        iou = F.linear(self.embedding[word].unsqueeze(0), self.w_iou, self.b_iou)
        i, o, u = iou.chunk(3, 1)
        c = torch.sigmoid(i) * torch.tanh(u)
        return c, torch.sigmoid(o) * torch.tanh(c)

    @torch.jit.export
    def internal(self, hs: List[torch.Tensor], cs: List[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        h_children, c_children = torch.cat(hs), torch.cat(cs)
        f = torch.sigmoid(F.linear(h_children, self.u_f, self.b_f))
        iou = F.linear(h_children.sum(0, keepdim=True), self.u_iou, self.b_iou)
        i, o, u = iou.chunk(3, 1)
        c = torch.sigmoid(i) * torch.tanh(u) + (f * c_children).sum(0, keepdim=True)
        return c, torch.sigmoid(o) * torch.tanh(c)

    @torch.jit.export
    def classify(self, h: torch.Tensor) -> torch.Tensor:
        return F.linear(h, self.w_out, self.b_out)

    def forward(self, words: List[int], children: List[List[int]]) -> torch.Tensor:
        cs: List[torch.Tensor] = []
        hs: List[torch.Tensor] = []
        for node in range(len(words)):
            kids = children[node]
            if len(kids) == 0:
                c, h = self.leaf(words[node])
            else:
                c, h = self.internal([hs[k] for k in kids], [cs[k] for k in kids])
            cs.append(c)
            hs.append(h)
        return self.classify(hs[-1])


def recursive_logits(model, root, word_id):
    """Root logits by Python recursion over train.py's tree nodes, calling `model`'s leaf and
    internal-node functions (eager methods or TorchScript ones)."""

    def state(node):
        if not node.children:
            return model.leaf(word_id(node.word))
        states = [state(child) for child in node.children]
        return model.internal([h for _, h in states], [c for c, _ in states])

    return model.classify(state(root)[1])


def flatten(root, word_id):
    """`TreeLSTM.forward`'s arguments for a tree of train.py nodes."""
    nodes = sst.postorder(root)
    position = {id(n): i for i, n in enumerate(nodes)}
    words = [word_id(n.word) if not n.children else -1 for n in nodes]
    return words, [[position[id(c)] for c in n.children] for n in nodes]


def treelstm_variants(limit):
    """The Tree-LSTM's PyTorch variants as (name, function of one input, inputs), and the
    check of a variant's outputs against the stored logits."""
    folder = os.path.join(EXAMPLES, "treelstm")
    params = load_file(os.path.join(folder, "weights.safetensors"))
    with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as f:
        vocab = {w: i for i, w in enumerate(f.read().rstrip("\n").split("\n"))}
    word_id = lambda w: vocab.get(w, 0)  # train.py's parser already lowercases words
    trees = sst.load(os.path.join(folder, "data", "sst-test.txt"))[:limit]
    reference = load_file(os.path.join(folder, "reference.safetensors"))["logits"][: len(trees)]

    model = TreeLSTM(params).eval()
    scripted = torch.jit.script(model)
    flat = [flatten(t, word_id) for t in trees]
    batched = sst.TreeLSTM(params["embedding"].shape[0]).eval()
    batched.load_state_dict(
        {
            "embedding.weight": params["embedding"],
            "w_iou.weight": params["w_iou"],
            "w_iou.bias": params["b_iou"],
            "u_iou.weight": params["u_iou"],
            "u_f.weight": params["u_f"],
            "u_f.bias": params["b_f"],
            "out.weight": params["w_out"],
            "out.bias": params["b_out"],
        }
    )
    one_tree_batches = [sst.Batch([t], vocab) for t in trees]
    return [
        ("eager", lambda x: model(*x), flat),
        ("TorchScript", lambda x: scripted(*x), flat),
        ("eager, Python recursion", lambda t: recursive_logits(model, t, word_id), trees),
        ("TorchScript cell, Python recursion", lambda t: recursive_logits(scripted, t, word_id), trees),
        ("eager, level-batched (train.py)", batched.root_logits, one_tree_batches),
    ], lambda logits: torch.allclose(torch.cat(logits), reference, atol=1e-4)


# ---------------------------------------------------------------------------------------------
# CharRNN


class Generator(nn.Module):
    """The tutorial's greedy `sample` (train.py) over its network, as a module that TorchScript
    compiles whole: letter ids from `start` until end-of-name or 20 more letters."""

    def __init__(self, rnn, n_categories):
        super().__init__()
        self.rnn, self.n_categories = rnn, n_categories

    def forward(self, category: int, start: int) -> List[int]:
        one_hot_category = torch.zeros(1, self.n_categories)
        one_hot_category[0, category] = 1.0
        hidden = torch.zeros(1, charrnn.HIDDEN)
        letter, ids = start, [start]
        for _ in range(charrnn.MAX_LENGTH):
            one_hot_letter = torch.zeros(1, charrnn.N_LETTERS)
            one_hot_letter[0, letter] = 1.0
            output, hidden = self.rnn(one_hot_category, one_hot_letter, hidden)
            letter = int(output.argmax())
            if letter == charrnn.EOS:
                break
            ids.append(letter)
        return ids


def charrnn_variants():
    """CharRNN's variants and the check of their names against names.jsonl."""
    folder = os.path.join(EXAMPLES, "charrnn")
    weights = load_file(os.path.join(folder, "weights.safetensors"))
    with open(os.path.join(folder, "names.jsonl"), encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    n_categories = len({line["category"] for line in lines})
    rnn = charrnn.RNN(n_categories)
    rnn.load_state_dict({k.replace("_", "."): v for k, v in weights.items()})
    model = Generator(rnn, n_categories).eval()
    scripted = torch.jit.script(model)
    inputs = [tuple(line["args"]) for line in lines]
    expected = [line["name"] for line in lines]
    check = lambda outputs: ["".join(charrnn.ALL_LETTERS[i] for i in ids) for ids in outputs] == expected
    return [("eager", lambda x: model(*x), inputs), ("TorchScript", lambda x: scripted(*x), inputs)], check


# ---------------------------------------------------------------------------------------------
# RNN, GRU, LSTM


class Fold(nn.Module):
    """An RNNCell or GRUCell over a sequence from a zero state, as rnn.relay / gru.relay."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, xs: List[torch.Tensor]) -> torch.Tensor:
        h = torch.zeros(1, self.cell.hidden_size)
        for x in xs:
            h = self.cell(x, h)
        return h


class FoldLSTM(nn.Module):
    """An LSTMCell over a sequence from a zero state, as lstm.relay: the final (h, c)."""

    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, xs: List[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
        h = c = torch.zeros(1, self.cell.hidden_size)
        for x in xs:
            h, c = self.cell(x, (h, c))
        return h, c


CELLS = {
    "rnn": (nn.RNNCell, Fold, nn.RNN),
    "gru": (nn.GRUCell, Fold, nn.GRU),
    "lstm": (nn.LSTMCell, FoldLSTM, nn.LSTM),
}


def read_sequences(path):
    """The `XS` lists of an inputs.jsonl file (Cons/Nil value JSON) as lists of [1, 128]."""
    sequences = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cell, xs = json.loads(line)["args"][0], []
            while cell["con"] == "Cons":
                x, cell = cell["fields"]
                xs.append(torch.tensor(x))
            sequences.append(xs)
    return sequences


def write_sequences(path, count, length):
    """Seeded sequences in reference.py's form (multiples of 1/64, exact in decimal)."""
    generator = torch.Generator().manual_seed(length)
    shape = (length, 1, SIZE)
    sequences = [list(torch.randint(-128, 128, shape, generator=generator) / 64) for _ in range(count)]
    with open(path, "w", encoding="utf-8") as f:
        for xs in sequences:
            cell = {"con": "Nil", "fields": []}
            for x in reversed(xs):
                cell = {"con": "Cons", "fields": [x.tolist(), cell]}
            f.write(json.dumps({"args": [cell]}, separators=(",", ":")) + "\n")
    return sequences


def cell_variants(name, sequences, reference):
    """The variants of cell `name` on `sequences`, and the check of their final states against
    `reference` (None when there is no reference)."""
    cell_class, fold_class, layer_class = CELLS[name]
    weights = load_file(os.path.join(EXAMPLES, "rnn", f"{name}.safetensors"))
    cell = cell_class(SIZE, SIZE)
    cell.load_state_dict(weights)
    layer = layer_class(SIZE, SIZE)
    layer.load_state_dict({f"{k}_l0": v for k, v in weights.items()})
    model = fold_class(cell).eval()
    scripted = torch.jit.script(model)
    zero = torch.zeros(1, SIZE)

    def whole_sequence(xs):
        if xs.shape[0] == 0:
            return zero if name != "lstm" else (zero, zero)
        out, state = layer(xs)
        return (state[0][0], state[1][0]) if name == "lstm" else state[0]

    stacked = [torch.stack(xs) if xs else torch.zeros(0, 1, SIZE) for xs in sequences]
    variants = [
        ("eager", model, sequences),
        ("TorchScript", scripted, sequences),
        (f"eager, nn.{layer_class.__name__} over the whole sequence", whole_sequence, stacked),
    ]
    if reference is None:
        return variants, None

    def check(outputs):
        final = [o if name != "lstm" else torch.cat(o) for o in outputs]
        return all(torch.allclose(f, r, atol=1e-5) for f, r in zip(final, reference))

    return variants, check


def cell_reference(name, count):
    stored = load_file(os.path.join(EXAMPLES, "rnn", "reference.safetensors"))
    if name == "lstm":
        return [torch.cat((stored[f"lstm.{k}.h"], stored[f"lstm.{k}.c"])) for k in range(count)]
    return [stored[f"{name}.{k}"] for k in range(count)]


# ---------------------------------------------------------------------------------------------


def benchmarks(args, tmp):
    """(model, inputs, Relay file, weights, JSONL inputs, PyTorch variants, reference check)
    for every row of the table. A check takes every output of a variant, in input order."""
    folder = os.path.join(EXAMPLES, "treelstm")
    sst_input = os.path.join(folder, "sst-test.jsonl")
    if args.sentences is not None:
        with open(sst_input, encoding="utf-8") as f:
            head = f.readlines()[: args.sentences]
        sst_input = os.path.join(tmp, "sst.jsonl")
        with open(sst_input, "w", encoding="utf-8") as f:
            f.writelines(head)
    variants, check = treelstm_variants(args.sentences)
    relay_files = (os.path.join(folder, "treelstm.relay"), os.path.join(folder, "weights.safetensors"))
    yield "Tree-LSTM", f"SST test, {len(variants[0][2])} sentences", *relay_files, sst_input, variants, check

    folder = os.path.join(EXAMPLES, "charrnn")
    variants, check = charrnn_variants()
    relay_files = (os.path.join(folder, "charrnn.relay"), os.path.join(folder, "weights.safetensors"))
    names = os.path.join(folder, "names.jsonl")
    yield "CharRNN", "468 names (18 languages x A-Z)", *relay_files, names, variants, check

    folder = os.path.join(EXAMPLES, "rnn")
    shipped = os.path.join(folder, "inputs.jsonl")
    shipped_sequences = read_sequences(shipped)
    lengths = ", ".join(str(len(xs)) for xs in shipped_sequences)
    long_input = os.path.join(tmp, f"long{args.long}.jsonl")
    long_sequences = write_sequences(long_input, args.long_count, args.long)
    for name in CELLS:
        relay_files = (os.path.join(folder, f"{name}.relay"), os.path.join(folder, f"{name}.safetensors"))
        variants, check = cell_variants(name, shipped_sequences, cell_reference(name, len(shipped_sequences)))
        yield name.upper(), f"shipped, lengths {lengths}", *relay_files, shipped, variants, check
        variants, _ = cell_variants(name, long_sequences, None)
        note = f"{args.long_count} x length {args.long}"
        yield name.upper(), note, *relay_files, long_input, variants, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes over the inputs (default 1)")
    ap.add_argument("--reps", type=int, default=3, help="timed passes over the inputs (default 3)")
    ap.add_argument("--min-runs", type=int, default=1000, help="timed calls per input set, at least")
    ap.add_argument("--sentences", type=int, default=None, help="only the first N SST test sentences")
    ap.add_argument("--long", type=int, default=100, help="length of the longer RNN sequences (default 100)")
    ap.add_argument("--long-count", type=int, default=8, help="how many longer sequences (default 8)")
    ap.add_argument("--cli", action="store_true", help="time the relay-vm binary (`relay-vm bench`), not the package")
    ap.add_argument("--relay-vm", default=os.path.join(ROOT, "target", "release", "relay-vm"), help="the binary --cli runs")
    ap.add_argument("--build", action="store_true", help="with --cli: rebuild relay-vm with cargo first")
    ap.add_argument("--opt-level", help="relay-vm's optimisation level (the binary's --opt-level, the package's opt_level)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker threads running whole requests, as relay-vm's -j (default 1)")
    ap.add_argument("--models", help="only these models, comma-separated (tree-lstm,charrnn,rnn,gru,lstm)")
    args = ap.parse_args()
    only = None if args.models is None else {m.strip().lower() for m in args.models.split(",")}

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.jit.script's deprecation
    if args.cli:
        relay = RelayVm(args.relay_vm, args.build, args.opt_level)
    elif relay_vm is None:
        sys.exit("error: the relay_vm package is not installed (pip install ./python), or pass --cli")
    else:
        relay = RelayPackage(args.opt_level)
    rows, other_rows = [], []
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        for model, note, relay_file, params, input_file, variants, check in benchmarks(args, tmp):
            if only is not None and model.lower() not in only:
                continue
            for variant, run, inputs in variants:
                if check is not None and not check([run(x) for x in inputs]):
                    sys.exit(f"error: {model}, PyTorch {variant}: outputs differ from the stored reference")
            reps = max(args.reps, -(-args.min_runs // len(variants[0][2])))
            print(f"timing {model}, {note}: {reps} passes ...", file=sys.stderr)
            r = relay.bench(relay_file, params, input_file, args.warmup, reps, args.jobs)
            stats = {v: time_requests(run, inputs, args.warmup, reps, args.jobs) for v, run, inputs in variants}
            rows.append((model, note, r, stats.pop("eager"), stats.pop("TorchScript")))
            other_rows += [(model, note, variant, s, r) for variant, s in stats.items()]

    ms = lambda s: f"{1e3 * s:.3f}"
    ratio = lambda a, b: f"{a.mean / b.mean:.2f}"
    opt = f", relay-vm --opt-level {args.opt_level}" if args.opt_level is not None else ""
    threads = "one thread" if args.jobs == 1 else f"{args.jobs} worker threads"
    threads += ", relay-vm " + ("binary (`relay-vm bench`)" if args.cli else "through the Python package")
    print(f"Mean latency per input in ms, {threads}{opt}; {args.warmup} warm-up pass(es), then")
    print(f"max({args.reps}, {args.min_runs} / inputs) timed passes over each input set.")
    print("Ratios are PyTorch time / relay-vm time: above 1, relay-vm is faster.\n")
    print("| model | inputs | relay-vm | PyTorch eager | TorchScript | eager / relay-vm ", end="")
    print("| TorchScript / relay-vm |")
    print("|---|---|--:|--:|--:|--:|--:|")
    for model, note, r, e, t in rows:
        print(f"| {model} | {note} | {ms(r.mean)} | {ms(e.mean)} | {ms(t.mean)} | {ratio(e, r)} | {ratio(t, r)} |")
    print("\nOther PyTorch formulations of the same models:\n")
    print("| model | inputs | PyTorch variant | ms | / relay-vm |")
    print("|---|---|---|--:|--:|")
    for model, note, variant, s, r in other_rows:
        print(f"| {model} | {note} | {variant} | {ms(s.mean)} | {ratio(s, r)} |")
    print(f"\nThroughput (inputs/s) and latency per request (mean / p99, ms), {threads}:\n")
    print("| model | inputs | runtime | inputs/s | mean ms | p99 ms |")
    print("|---|---|---|--:|--:|--:|")
    for model, note, r, e, t in rows:
        for runtime, s in (("relay-vm", r), ("PyTorch eager", e), ("TorchScript", t)):
            print(f"| {model} | {note} | {runtime} | {s.throughput:.0f} | {ms(s.mean)} | {ms(s.p99)} |")


if __name__ == "__main__":
    main()
