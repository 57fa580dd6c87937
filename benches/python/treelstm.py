"""TreeLSTM through the Python package: ms per sentence of `prog(tree)` timed from Python
against `Program.bench` (the run timed inside Rust, as `relay-vm bench` times it) on the same
SST test sentences, the time to convert the trees alone, and the throughput of 2 Python
threads calling the one program against 1 (the GIL is released while a VM runs).

    python benches/python/treelstm.py [--sentences N] [--reps R]
"""

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import relay_vm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "treelstm"


def from_json(j):
    """A JSON tree (`{"con": "Rose", "fields": [word, children]}`) as relay_vm values."""
    if isinstance(j, dict):
        fields = [from_json(f) for f in j["fields"]]
        if j["con"] == "Nil":
            return []
        if j["con"] == "Cons":
            return [fields[0], *fields[1]]
        return relay_vm.Adt(j["con"], *fields)
    return j


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=200, help="first N SST test sentences (default 200)")
    ap.add_argument("--reps", type=int, default=3, help="timed passes (default 3; the best counts)")
    args = ap.parse_args()
    prog = relay_vm.compile(EXAMPLES / "treelstm.relay", params=EXAMPLES / "weights.safetensors")
    lines = (EXAMPLES / "sst-test.jsonl").read_text().splitlines()[: args.sentences]
    trees = [from_json(json.loads(line)["args"][0]) for line in lines]
    for t in trees:
        prog(t)
    best = float("inf")
    for _ in range(args.reps):
        start = time.perf_counter()
        for t in trees:
            prog(t)
        best = min(best, (time.perf_counter() - start) / len(trees))
    rust = prog.bench(trees, reps=args.reps, warmup=0)["mean_ms"]
    convert = float("inf")
    for _ in range(args.reps):
        start = time.perf_counter()
        for t in trees:
            prog._input_addresses(t)
        convert = min(convert, (time.perf_counter() - start) / len(trees))
    throughput = {}
    for threads in (1, 2):
        with ThreadPoolExecutor(threads) as pool:
            start = time.perf_counter()
            for _ in range(args.reps):
                list(pool.map(prog, trees))
            throughput[threads] = args.reps * len(trees) / (time.perf_counter() - start)
    print(f"sentences {len(trees)}: python {1e3 * best:.3f} ms, rust (bench) {rust:.3f} ms, "
          f"over {1e3 * best - rust:.3f} ms; converting a tree {1e3 * convert:.3f} ms")
    print(f"throughput: 1 thread {throughput[1]:.0f}/s, 2 threads {throughput[2]:.0f}/s "
          f"({throughput[2] / throughput[1]:.2f}x)")


if __name__ == "__main__":
    main()
