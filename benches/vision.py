#!/usr/bin/env python3
"""Times the vision models of examples/vision/ on relay-vm and on onnxruntime, batch 1, on
--threads N threads (one by default), and writes the table at the top of benches/vision.md
(the file's `## ` sections below the table are kept).

For each model whose ONNX file exists (`examples/vision/export.py` writes them; ResNet-18 and
VGG-16 are not in git), on the input of its `.ref.safetensors`:
  - checks relay-vm's output (`relay-vm run`) against onnxruntime's and PyTorch's stored
    outputs, |ours - reference| <= 1e-4 |reference| + 1e-5 per element;
  - the number of timed runs R fills about --seconds of onnxruntime's CPU time (10 to 1000);
  - relay-vm: `relay-vm bench -j 1 --threads N --format json` (the release binary), p50 latency of the
    timed runs; CPU time per inference is the difference in the process's CPU time (user +
    system) between a run with 2R and one with R timed runs, divided by R, so that importing
    and compiling the model do not count;
  - onnxruntime: an InferenceSession with intra_op_num_threads=N and inter_op_num_threads=1
    (sequential execution), p50 of per-call wall times and CPU time per call
    (`time.process_time` over the timed calls).

    cargo build --release && python benches/vision.py [--seconds S] [--threads N] [MODEL ...]
Needs numpy and onnxruntime only (CI's .ci/requirements.txt; no torch).
"""
import argparse
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

ROOT = pathlib.Path(__file__).resolve().parent.parent
VISION = ROOT / "examples" / "vision"
MODELS = ["dqn", "squeezenet1_1", "mobilenet_v2", "resnet18", "vgg16"]
WARMUP = 2


def load_file(path):
    """The float32 tensors of a safetensors file (an 8-byte header length, a JSON header of
    name -> dtype, shape, data_offsets, then the data), without the safetensors package."""
    raw = pathlib.Path(path).read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + size])
    header.pop("__metadata__", None)
    data = raw[8 + size:]
    tensors = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", f"{path}: {name} is {info['dtype']}"
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(data[start:end], dtype="<f4").reshape(info["shape"])
    return tensors


def model_path(name):
    """The ONNX file of `name`: in examples/vision/ if committed, else in models/."""
    for path in (VISION / f"{name}.onnx", VISION / "models" / f"{name}.onnx"):
        if path.exists():
            return path
    return None


def close(ours, reference):
    return bool(np.all(np.abs(ours - reference) <= 1e-4 * np.abs(reference) + 1e-5))


def run_timed(binary, *args):
    """Runs `relay-vm args`; (stdout, CPU seconds: user + system of the child)."""
    def cpu():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    before = cpu()
    out = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"relay-vm {' '.join(map(str, args))} failed:\n{out.stderr}")
    return out.stdout, cpu() - before


def input_lines(name, x):
    """Writes `x` as a `relay-vm run --input` line, `{"input": TENSOR}`, to
    examples/vision/models/NAME.input.jsonl (git-ignored) and returns that path."""
    path = VISION / "models" / f"{name}.input.jsonl"
    path.parent.mkdir(exist_ok=True)
    tensor = {"dtype": "float32", "shape": list(x.shape), "data": x.ravel().tolist()}
    path.write_text(json.dumps({"input": tensor}) + "\n")
    return path


def relay_bench(binary, path, inputs, reps, threads):
    """relay-vm's p50 latency (ms) and CPU time per inference (ms)."""
    common = ["bench", path, "--input", inputs, "-j", "1", "--threads", threads, "--warmup", WARMUP,
              "--format", "json"]
    once, cpu_once = run_timed(binary, *common, "--reps", reps)
    _, cpu_twice = run_timed(binary, *common, "--reps", 2 * reps)
    p50 = json.loads(once)["latency_ms"]["p50"]
    return p50, 1e3 * (cpu_twice - cpu_once) / reps


def ort_session(path, threads):
    """An onnxruntime session whose operators use `threads` threads."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def repetitions(session, x, seconds):
    """How many timed runs fill about `seconds` of onnxruntime's CPU time (10 to 1000)."""
    feed = {session.get_inputs()[0].name: x}
    session.run(None, feed)
    cpu = time.process_time()
    session.run(None, feed)
    return max(10, min(1000, int(seconds / max(time.process_time() - cpu, 1e-6))))


def ort_bench(session, x, reps):
    """onnxruntime's output, p50 latency (ms) and CPU time per inference (ms)."""
    feed = {session.get_inputs()[0].name: x}
    for _ in range(WARMUP):
        output = session.run(None, feed)[0]
    samples = []
    cpu = time.process_time()
    for _ in range(reps):
        start = time.perf_counter()
        session.run(None, feed)
        samples.append(time.perf_counter() - start)
    cpu = time.process_time() - cpu
    return output, 1e3 * statistics.median(samples), 1e3 * cpu / reps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="*", default=MODELS)
    parser.add_argument("--seconds", type=float, default=2.0,
                        help="timed runs per model: as many as fill this much of onnxruntime's CPU time")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads within one inference: relay-vm's --threads, onnxruntime's intra_op_num_threads")
    parser.add_argument("--binary", default=ROOT / "target" / "release" / "relay-vm")
    parser.add_argument("--out", default=ROOT / "benches" / "vision.md")
    args = parser.parse_args()
    rows, load = [], os.getloadavg()[0]
    for name in args.models:
        path = model_path(name)
        if path is None:
            print(f"{name}: no ONNX file (python examples/vision/export.py {name})", file=sys.stderr)
            continue
        refs_path = path.with_suffix(".ref.safetensors")
        refs = load_file(str(refs_path))
        inputs = input_lines(name, refs["input"])
        printed, _ = run_timed(args.binary, "run", path, "--input", inputs, "-j", "1", "--threads", args.threads)
        ours = np.array(json.loads(printed.splitlines()[0])["data"], dtype=np.float32).reshape(refs["torch"].shape)
        session = ort_session(path, args.threads)
        reps = repetitions(session, refs["input"], args.seconds)
        expected, ort_p50, ort_cpu = ort_bench(session, refs["input"], reps)
        checked = all(close(ours, r) for r in (refs["torch"], refs["onnxruntime"], expected))
        relay_p50, relay_cpu = relay_bench(args.binary, path, inputs, reps, args.threads)
        row = (name, checked, relay_p50, relay_cpu, ort_p50, ort_cpu, reps)
        print(f"{name}: matches={checked} relay-vm p50 {relay_p50:.2f} ms cpu {relay_cpu:.2f} ms, "
              f"onnxruntime p50 {ort_p50:.2f} ms cpu {ort_cpu:.2f} ms", file=sys.stderr)
        rows.append(row)
    write(args.out, rows, args.binary, (load, os.getloadavg()[0]), args.threads)


def write(out, rows, binary, load, threads):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    lines = [
        f"# Vision models: relay-vm vs onnxruntime, {threads} thread{'s' if threads > 1 else ''}, batch 1",
        "",
        f"Written by `benches/vision.py` on {time.strftime('%Y-%m-%d')} ({cpu}, {os.cpu_count()} cores, "
        f"{platform.system()}; `{os.path.relpath(binary, ROOT)}`, onnxruntime {ort.__version__}).",
        "Milliseconds per inference: p50 of the timed runs' wall-clock latency, and CPU time",
        f"(user + system) per inference; {WARMUP} warm-up runs, then the reps column's timed runs.",
        "`matches`: relay-vm's output is within 1e-4 relative (+1e-5 absolute) of PyTorch's and",
        "onnxruntime's. Load average (1 min) at start and end: "
        f"{load[0]:.1f}, {load[1]:.1f}; on a busy machine wall-clock latency counts time spent",
        "waiting for a core, CPU time does not: compare the CPU columns.",
        "",
        "| model | matches | relay-vm p50 | relay-vm CPU | onnxruntime p50 | onnxruntime CPU | relay-vm / onnxruntime (CPU) | reps |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, checked, rp, rc, op, oc, reps in rows:
        lines.append(f"| {name} | {'yes' if checked else 'NO'} | {rp:.2f} | {rc:.2f} | {op:.2f} | {oc:.2f} | "
                     f"{rc / oc:.2f}x | {reps} |")
    # The findings written by hand below the table (its `## ` sections) stay.
    old = pathlib.Path(out).read_text() if pathlib.Path(out).exists() else ""
    kept = old[old.index("\n## ") + 1:] if "\n## " in old else ""
    pathlib.Path(out).write_text("\n".join(lines) + "\n" + ("\n" + kept if kept else ""))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
