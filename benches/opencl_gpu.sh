#!/usr/bin/env bash
# The OpenCL path on a real GPU, in one run: lists the devices, runs the OpenCL end-to-end
# tests on the GPU (prebuilt test binaries, `RELAY_TEST_DEVICE=opencl`), and times the
# models with fused kernels on the GPU (`--device opencl`) against the host's Cranelift JIT
# (`--device cpu`), with PyTorch (CUDA and CPU) and onnxruntime (CPU) beside the vision
# models when they are installed.
#
#   benches/opencl_gpu.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds `relay-vm` and the test binaries `golden_run`, `fusion_ops`, `models`,
# `opencl_device` (this crate's tests) and `kernels`, `opencl` (relay-jit's, built with
# `--features opencl`), built on another machine with
#   cargo build --release && cargo test --release --no-run -p relay --test golden_run \
#     --test fusion_ops --test models --test opencl_device && \
#   cargo test --release --no-run -p relay-jit --features opencl --test kernels --test opencl
# The test binaries find their data through the checkout path they were built in
# (`CARGO_MANIFEST_DIR`): BUILT_IN names it (default /work/main), and it is linked here.
# An NVIDIA driver without an OpenCL ICD file gets one for its libnvidia-opencl.so.1.
# Writes OUT_DIR/tests.log (each test binary's result line and its failures), OUT_DIR/bench.jsonl
# (one JSON object per model and device) and OUT_DIR/bench.md (the table).
set -u
BIN=$(realpath "$1")
OUT=$(realpath "$2")
ROOT=$(realpath "$(dirname "$0")/..")
cd "$ROOT"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== machine"
nvidia-smi -L 2>&1 | head -3
nproc
# The NVIDIA OpenCL driver, when installed, becomes the only OpenCL platform (an ICD file
# of its own in OCL_ICD_VENDORS), so that `opencl` is the GPU and not a CPU driver such as
# POCL that the machine may also have; without it the run stops (REQUIRE_GPU=0 goes on).
lib=$( (ldconfig -p | awk '/libnvidia-opencl.so/ {print $NF}'
       find /usr/local/nvidia /usr/lib /usr/lib64 /lib /opt -name 'libnvidia-opencl.so*' 2>/dev/null) | head -1)
echo "NVIDIA OpenCL driver: ${lib:-none found}"
if [ -n "$lib" ]; then
  mkdir -p /tmp/icd && echo "$lib" > /tmp/icd/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/icd
elif [ "${REQUIRE_GPU:-1}" = 1 ]; then
  ls /etc/OpenCL/vendors/ 2>&1; exit 3
fi
"$BIN/relay-vm" devices

echo "== tests on the GPU (RELAY_TEST_DEVICE=opencl)"
built_in=${BUILT_IN:-/work/main}
if [ "$built_in" != "$ROOT" ] && [ ! -e "$built_in" ]; then
  mkdir -p "$(dirname "$built_in")" && ln -s "$ROOT" "$built_in"
fi
mkdir -p "$built_in/../shared" 2>/dev/null
# The tests that run the CLI find it where cargo built it (`CARGO_BIN_EXE_relay-vm`).
[ -e "$ROOT/target/release/relay-vm" ] || { mkdir -p "$ROOT/target/release" && cp "$BIN/relay-vm" "$ROOT/target/release/"; }
export RELAY_TEST_DEVICE=opencl RELAY_REQUIRE_OPENCL=1
# The binaries (TESTS, default all) run side by side (the GPU machine has many cores), each
# for at most TEST_TIMEOUT seconds (default 200).
tests=${TESTS:-opencl kernels opencl_device fusion_ops golden_run models}
for t in $tests; do
  [ -x "$BIN/$t" ] || continue
  dir=$built_in; case $t in opencl|kernels) dir=$built_in/jit;; esac
  (cd "$dir" && start=$(date +%s) && timeout "${TEST_TIMEOUT:-200}" "$BIN/$t" --test-threads 3 > "/tmp/test-$t.log" 2>&1
   echo "exit $?, $(( $(date +%s) - start )) s" >> "/tmp/test-$t.log") &
done
wait
for t in $tests; do
  [ -x "$BIN/$t" ] || { echo "$t: not built"; continue; }
  echo "$t: $(tail -1 "/tmp/test-$t.log"): $(grep -E '^test result' "/tmp/test-$t.log" | tail -1)"
  grep -qE '^exit 0,' <(tail -1 "/tmp/test-$t.log") || grep -E "FAILED|panicked|failed" "/tmp/test-$t.log" | head -30
done 2>&1 | tee "$OUT/tests.log"
unset RELAY_TEST_DEVICE

echo "== models: fused kernels on the GPU against the host JIT"
mkdir -p /tmp/inputs
head -300 examples/treelstm/sst-test.jsonl > /tmp/inputs/sst300.jsonl
python3 - <<'EOF'
import json, pathlib
import numpy as np
from safetensors.numpy import load_file
for p in pathlib.Path("examples/vision").glob("*.ref.safetensors"):
    x = load_file(p)["input"]
    line = {"input": {"dtype": "float32", "shape": list(x.shape), "data": x.ravel().tolist()}}
    (pathlib.Path("/tmp/inputs") / (p.name.split(".")[0] + ".jsonl")).write_text(json.dumps(line) + "\n")
EOF
if python3 -c 'import torch, torchvision' 2>/dev/null; then
  python3 examples/vision/export.py resnet18 >/dev/null 2>&1
  python3 - <<'EOF'
import json, pathlib
from safetensors.numpy import load_file
x = load_file("examples/vision/models/resnet18.ref.safetensors")["input"]
line = {"input": {"dtype": "float32", "shape": list(x.shape), "data": x.ravel().tolist()}}
pathlib.Path("/tmp/inputs/resnet18.jsonl").write_text(json.dumps(line) + "\n")
EOF
fi
: > "$OUT/bench.jsonl"
bench() { # NAME FILE ARGS...
  local name=$1; shift
  for dev in cpu opencl; do
    if "$BIN/relay-vm" bench "$@" --device "$dev" --format json > /tmp/b.json 2> /tmp/b.err; then
      python3 -c "import json,sys; d=json.load(open('/tmp/b.json')); d['model']='$name'; d['device']='$dev'; print(json.dumps(d))" >> "$OUT/bench.jsonl"
    else
      echo "$name on $dev failed: $(tail -3 /tmp/b.err)"
    fi
  done
}
bench treelstm examples/treelstm/treelstm.relay --params examples/treelstm/weights.safetensors --input /tmp/inputs/sst300.jsonl
bench charrnn examples/charrnn/charrnn.relay --params examples/charrnn/weights.safetensors --input examples/charrnn/names.jsonl
for cell in rnn gru lstm; do
  bench "$cell" "examples/rnn/$cell.relay" --params "examples/rnn/$cell.safetensors" --input examples/rnn/inputs.jsonl
done
for m in dqn squeezenet1_1 mobilenet_v2 resnet18; do
  f=examples/vision/$m.onnx; [ -f "$f" ] || f=examples/vision/models/$m.onnx
  [ -f "$f" ] && [ -f "/tmp/inputs/$m.jsonl" ] && bench "$m" "$f" --input "/tmp/inputs/$m.jsonl"
done

echo "== vision models on PyTorch (CUDA, CPU) and onnxruntime (CPU), the same inputs"
python3 - "$OUT" <<'EOF' 2>&1 | grep -v Warning
import json, pathlib, sys, time
import numpy as np
out = pathlib.Path(sys.argv[1])
rows = [json.loads(l) for l in (out / "bench.jsonl").read_text().splitlines() if l.strip()]
extra = {}
try:
    import onnxruntime as ort
    for m in ["dqn", "squeezenet1_1", "mobilenet_v2", "resnet18"]:
        f = pathlib.Path("examples/vision") / f"{m}.onnx"
        if not f.exists():
            f = pathlib.Path("examples/vision/models") / f"{m}.onnx"
        if not f.exists() or not pathlib.Path(f"/tmp/inputs/{m}.jsonl").exists():
            continue
        line = json.loads(pathlib.Path(f"/tmp/inputs/{m}.jsonl").read_text())["input"]
        x = np.array(line["data"], dtype=np.float32).reshape(line["shape"])
        s = ort.InferenceSession(str(f), providers=["CPUExecutionProvider"])
        name = s.get_inputs()[0].name
        for _ in range(3):
            s.run(None, {name: x})
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < 1.0:
            s.run(None, {name: x}); n += 1
        extra.setdefault(m, {})["onnxruntime CPU"] = (time.perf_counter() - t0) / n * 1e3
except Exception as e:
    print("onnxruntime:", e)
try:
    import torch, torchvision
    sys.path.insert(0, "examples/vision")
    nets = {"squeezenet1_1": torchvision.models.squeezenet1_1, "mobilenet_v2": torchvision.models.mobilenet_v2,
            "resnet18": torchvision.models.resnet18}
    for m, make in nets.items():
        net = make().eval()
        for dev in ["cuda", "cpu"]:
            if dev == "cuda" and not torch.cuda.is_available():
                continue
            n_ = net.to(dev); x = torch.randn(1, 3, 224, 224, device=dev)
            with torch.no_grad():
                for _ in range(5):
                    n_(x)
                if dev == "cuda": torch.cuda.synchronize()
                n, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < 1.0:
                    n_(x); n += 1
                if dev == "cuda": torch.cuda.synchronize()
            extra.setdefault(m, {})[f"PyTorch eager {dev.upper()}"] = (time.perf_counter() - t0) / n * 1e3
except Exception as e:
    print("torch:", e)
lines = ["| model | relay-vm host JIT, p50 ms | relay-vm OpenCL GPU, p50 ms | kernel build host / GPU, ms | others, mean ms |", "|---|---:|---:|---:|---|"]
for m in dict.fromkeys(r["model"] for r in rows):
    by = {r["device"]: r for r in rows if r["model"] == m}
    def ms(d):
        r = by.get(d)
        return f"{r['latency_ms']['p50']:.3f}" if r else "—"
    def build(d):
        r = by.get(d)
        return f"{r['build_ms']['kernels']:.0f}" if r else "—"
    others = ", ".join(f"{k} {v:.2f}" for k, v in extra.get(m, {}).items())
    lines.append(f"| {m} | {ms('cpu')} | {ms('opencl')} | {build('cpu')} / {build('opencl')} | {others} |")
(out / "bench.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
