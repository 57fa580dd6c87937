"""The Python package's call overhead: `prog(x)` timed from Python against the same
program's run timed inside Rust (`Program.bench`, the loop `relay-vm bench` runs), on tiny
programs where the run itself costs next to nothing.

    python benches/python/overhead.py [--calls N] [--repeat R]

Prints, per program, the best-of-R mean time of one Python call, the Rust run's mean, and the
difference: what a Python user pays per call on top of the VM (issue #19's target: < 5 µs).
"""

import argparse
import timeit

import numpy as np

import relay_vm

# (name, Relay source, the call's arguments)
PROGRAMS = [
    ("identity (4 x f32)", "def @main(%x: Tensor[(4), float32]) { %x }",
     (np.ones(4, dtype=np.float32),)),
    ("add (4 x f32)", "def @main(%x: Tensor[(4), float32]) { add(%x, %x) }",
     (np.ones(4, dtype=np.float32),)),
    ("add two inputs (16 x f32)",
     "def @main(%x: Tensor[(16), float32], %y: Tensor[(16), float32]) { add(%x, %y) }",
     (np.ones(16, dtype=np.float32), np.ones(16, dtype=np.float32))),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000, help="calls per timing (default 100000)")
    ap.add_argument("--repeat", type=int, default=5, help="timings; the best counts (default 5)")
    args = ap.parse_args()
    print(f"{'program':<28} {'python µs':>10} {'rust µs':>9} {'overhead µs':>12}")
    for name, text, inputs in PROGRAMS:
        prog = relay_vm.compile(text=text)
        times = timeit.repeat(lambda: prog(*inputs), number=args.calls, repeat=args.repeat)
        python_us = 1e6 * min(times) / args.calls
        # One input set, timed `calls` times on one VM by Rust: `relay-vm bench`'s figure.
        # (`bench` takes a lone input as itself, not as a 1-tuple.)
        item = inputs[0] if len(inputs) == 1 else inputs
        rust = min(prog.bench([item], reps=args.calls, warmup=100)["mean_ms"] for _ in range(args.repeat))
        rust_us = 1e3 * rust
        print(f"{name:<28} {python_us:>10.2f} {rust_us:>9.2f} {python_us - rust_us:>12.2f}")


if __name__ == "__main__":
    main()
