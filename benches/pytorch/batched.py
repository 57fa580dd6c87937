"""Throughput of the Tree-LSTM with batching across requests: relay-vm's `--batch B` (DyNet-style
autobatching in the VM) against PyTorch eager over B trees at once (train.py's level batching)
and DyNet 2 with autobatching over B trees per computation graph, at batch 1/4/16/64.

    python benches/pytorch/batched.py [--batches 1,4,16,64] [--jobs 1,2] [--sentences N]
                                      [--reps N] [--relay-vm PATH] [--cli-only]

relay-vm runs as `relay-vm bench --batch B -j J` (release binary; the latencies it reports are
each request's, from its start to its result, compile time excluded). PyTorch and DyNet run
on one thread (`torch.set_num_threads(1)`; DyNet's CPU build is single-threaded) and take B
requests at a time: each request's latency is its batch's, as all of a batch's results arrive
together. Every runtime's outputs are checked against the stored reference logits (within
1e-4) before timing. DyNet: `pip install dynet38`; without it its column says why.
"""

import argparse
import os
import resource
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOLDER = os.path.join(ROOT, "examples", "treelstm")


def percentile(samples, q):
    """The nearest-rank `q`-th percentile (as `relay-vm bench` computes it)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, -(-q * len(ordered) // 100) - 1))]


def children_cpu():
    """CPU seconds (user + sys) of this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def relay_vm(binary, inputs, count, batch, jobs, reps):
    """(inputs/s, mean ms, p99 ms, CPU ms per input) from `relay-vm bench --batch batch -j jobs`
    (compare.py's runner) over `count` inputs; the CPU time covers the whole process (compile,
    the warm-up pass and every thread's timed passes) over every run it made."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from compare import RelayVm

    relay_file, params = os.path.join(FOLDER, "treelstm.relay"), os.path.join(FOLDER, "weights.safetensors")
    cpu = children_cpu()
    stats = RelayVm(binary, False, None).bench(relay_file, params, inputs, 1, reps, jobs, batch)
    cpu = children_cpu() - cpu
    return stats.throughput, 1e3 * stats.mean, 1e3 * stats.p99, 1e3 * cpu / (count * (1 + reps) * jobs)


def in_batches(run, requests, batch, reps):
    """(inputs/s, mean ms, p99 ms, CPU ms per input) of `run(list of requests)` over `reps`
    passes of `requests` taken `batch` at a time, after one untimed pass; a request's latency
    is its batch's."""
    chunks = [requests[i : i + batch] for i in range(0, len(requests), batch)]
    for chunk in chunks:
        run(chunk)
    samples = []
    started, cpu = time.perf_counter(), time.process_time()
    for _ in range(reps):
        for chunk in chunks:
            start = time.perf_counter()
            run(chunk)
            samples += [time.perf_counter() - start] * len(chunk)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    mean, p99 = 1e3 * statistics.fmean(samples), 1e3 * percentile(samples, 99)
    return len(samples) / wall, mean, p99, 1e3 * cpu / len(samples)


def pytorch(trees, vocab, params, reference):
    """train.py's level-batched model: a run over a list of trees returns their logits."""
    import torch

    sys.path.insert(0, FOLDER)
    import train as sst

    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    model = sst.TreeLSTM(params["embedding"].shape[0]).eval()
    names = {"embedding.weight": "embedding", "w_iou.weight": "w_iou", "w_iou.bias": "b_iou"}
    names.update({"u_iou.weight": "u_iou", "u_f.weight": "u_f", "u_f.bias": "b_f"})
    names.update({"out.weight": "w_out", "out.bias": "b_out"})
    model.load_state_dict({k: torch.from_numpy(params[v]) for k, v in names.items()})

    def run(chunk):
        with torch.inference_mode():
            return model.root_logits(sst.Batch(chunk, vocab)).numpy()

    got = np.concatenate([run(trees[i : i + 16]) for i in range(0, len(trees), 16)])
    if not np.allclose(got, reference, atol=1e-4):
        sys.exit("error: PyTorch's logits differ from the stored reference")
    return run


def dynet(trees, vocab, params, reference):
    """The Tree-LSTM in DyNet with autobatching: one computation graph per list of trees."""
    import dynet_config

    dynet_config.set(autobatch=1, mem="512")
    import dynet as dy

    pc = dy.ParameterCollection()
    embedding = pc.lookup_parameters_from_numpy(params["embedding"])
    weights = {k: pc.parameters_from_numpy(params[k]) for k in params if k != "embedding"}
    m = params["u_f"].shape[0]

    def state(node):
        if not node.children:
            w = weights
            iou = dy.affine_transform([w["b_iou"], w["w_iou"], dy.lookup(embedding, vocab.get(node.word, 0))])
            c = dy.cmult(dy.logistic(dy.pick_range(iou, 0, m)), dy.tanh(dy.pick_range(iou, 2 * m, 3 * m)))
            return c, dy.cmult(dy.logistic(dy.pick_range(iou, m, 2 * m)), dy.tanh(c))
        kids = [state(child) for child in node.children]
        w = weights
        iou = dy.affine_transform([w["b_iou"], w["u_iou"], dy.esum([h for _, h in kids])])
        forget = [dy.cmult(dy.logistic(dy.affine_transform([w["b_f"], w["u_f"], h])), c) for c, h in kids]
        c = dy.cmult(dy.logistic(dy.pick_range(iou, 0, m)), dy.tanh(dy.pick_range(iou, 2 * m, 3 * m)))
        c = c + dy.esum(forget)
        return c, dy.cmult(dy.logistic(dy.pick_range(iou, m, 2 * m)), dy.tanh(c))

    def run(chunk):
        dy.renew_cg()
        logits = [dy.affine_transform([weights["b_out"], weights["w_out"], state(t)[1]]) for t in chunk]
        dy.forward(logits)
        return np.stack([l.npvalue() for l in logits])

    got = np.concatenate([run(trees[i : i + 16]) for i in range(0, len(trees), 16)])
    if not np.allclose(got, reference, atol=1e-4):
        sys.exit("error: DyNet's logits differ from the stored reference")
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="1,4,16,64", help="batch sizes (default 1,4,16,64)")
    ap.add_argument("--jobs", default="1,2", help="relay-vm's -j values (default 1,2)")
    ap.add_argument("--sentences", type=int, default=None, help="only the first N SST test sentences")
    ap.add_argument("--reps", type=int, default=3, help="timed passes (default 3)")
    ap.add_argument("--relay-vm", default=os.path.join(ROOT, "target", "release", "relay-vm"))
    ap.add_argument("--cli-only", action="store_true", help="relay-vm only, no PyTorch or DyNet")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    jobs = [int(j) for j in args.jobs.split(",") if j]

    from safetensors.numpy import load_file

    sys.path.insert(0, FOLDER)
    import train as sst

    params = load_file(os.path.join(FOLDER, "weights.safetensors"))
    with open(os.path.join(FOLDER, "vocab.txt"), encoding="utf-8") as f:
        ids = {w: i for i, w in enumerate(f.read().rstrip("\n").split("\n"))}
    trees = sst.load(os.path.join(FOLDER, "data", "sst-test.txt"))[: args.sentences]
    reference = load_file(os.path.join(FOLDER, "reference.safetensors"))["logits"][: len(trees)]
    inputs = os.path.join(FOLDER, "sst-test.jsonl")
    if args.sentences is not None:
        inputs = f"/tmp/sst-{args.sentences}.jsonl"
        with open(os.path.join(FOLDER, "sst-test.jsonl"), encoding="utf-8") as f, open(inputs, "w") as out:
            out.writelines(f.readlines()[: args.sentences])

    rows = []
    for j in jobs:
        for b in batches:
            print(f"relay-vm --batch {b} -j {j} ...", file=sys.stderr)
            rows.append(("relay-vm", b, j, relay_vm(args.relay_vm, inputs, len(trees), b, j, args.reps)))
    if not args.cli_only:
        for name, make in (("PyTorch eager, level-batched", pytorch), ("DyNet autobatch", dynet)):
            try:
                run = make(trees, ids, params, reference)
            except ImportError as e:
                print(f"{name}: cannot import: {e}", file=sys.stderr)
                rows.append((name, None, 1, str(e)))
                continue
            for b in batches:
                print(f"{name}, batch {b} ...", file=sys.stderr)
                rows.append((name, b, 1, in_batches(run, trees, b, args.reps)))

    print(f"Tree-LSTM, SST test ({len(trees)} sentences): throughput and latency per request")
    print("(mean / p99 ms; a batched request's latency runs from its start to its result; CPU ms per")
    print("input is user + sys time over the inputs run: the steadier figure on a loaded machine).\n")
    print("| runtime | batch | threads | inputs/s | ms per input (1 / throughput) | CPU ms per input | mean ms | p99 ms |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for name, b, j, figures in rows:
        if isinstance(figures, str):
            print(f"| {name} | - | - | {figures} | | | | |")
            continue
        throughput, mean, p99, cpu = figures
        print(f"| {name} | {b} | {j} | {throughput:.0f} | {1e3 / throughput:.3f} | {cpu:.3f} | {mean:.3f} | {p99:.3f} |")


if __name__ == "__main__":
    main()
