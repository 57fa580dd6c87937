#!/usr/bin/env bash
# Compile-time scaling (issue 17): generates programs of growing size in each shape the issue
# names, and prints one markdown row per program: shape, size, bytes, then wall time and peak
# RSS (`/usr/bin/time -v`) of `relay-vm check` and of `relay-vm compile` (all passes at the
# default opt-level, bytecode emission, executable written).
#
#   cargo build --release --bin relay-vm && benches/scaling.sh [SIZES...]   (SCALING_TIMEOUT=120 s per run)
#
# The figures of the last run are in benches/scaling.md.
set -euo pipefail
bin="${RELAY_VM:-$(dirname "$0")/../target/release/relay-vm}"
sizes=("${@:-10000 100000}")
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# gen SHAPE N: a program of that shape and size on stdout.
gen() {
    local shape=$1 n=$2
    case $shape in
    let) # a let chain of n float32 additions
        awk -v n="$n" 'BEGIN { print "def @main(%x: float32) -> float32 {\n  let %y0 = %x;";
            for (i = 1; i < n; i++) printf "  let %%y%d = add(%%y%d, 1f);\n", i, i - 1;
            printf "  %%y%d\n}\n", n - 1 }' ;;
    tuple) # a tuple nested n deep
        awk -v n="$n" 'BEGIN { printf "def @main() {\n";
            for (i = 0; i < n; i++) printf "(";
            printf "1"; for (i = 0; i < n; i++) printf ", 2)"; print "\n}" }' ;;
    cons) # a list literal of n elements
        awk -v n="$n" 'BEGIN { printf "def @main() -> List[int32] {\n";
            for (i = 0; i < n; i++) printf "Cons(%d, ", i;
            printf "Nil"; for (i = 0; i < n; i++) printf ")"; print "\n}" }' ;;
    elseif) # an else-if chain of n arms
        awk -v n="$n" 'BEGIN { print "def @main(%x: int32) -> int32 {";
            for (i = 0; i < n; i++) printf "if (equal(%%x, %d)) { %d } else {\n", i, i;
            printf "-1"; for (i = 0; i < n; i++) printf "}"; print "\n}" }' ;;
    match) # n nested matches
        awk -v n="$n" 'BEGIN { print "def @main(%x: Option[int32]) -> int32 {";
            for (i = 0; i < n; i++) printf "match (%%x) { Some(%%y) => ";
            printf "0"; for (i = 0; i < n; i++) printf ", None => 1 }"; print "\n}" }' ;;
    defs) # n small functions, each calling the previous one
        awk -v n="$n" 'BEGIN { print "def @f0(%x: float32) -> float32 { %x }";
            for (i = 1; i < n; i++) printf "def @f%d(%%x: float32) -> float32 {\n  let %%y = multiply(%%x, 2f);\n  @f%d(add(%%y, 1f))\n}\n", i, i - 1;
            printf "def @main(%%x: float32) -> float32 { @f%d(%%x) }\n", n - 1 }' ;;
    esac
}

# measure CMD...: "seconds | MB" of one run (or "fails" and the first line of its stderr).
measure() {
    if timeout "${SCALING_TIMEOUT:-120}" /usr/bin/time -o "$dir/time" -f '%e %M' "$@" >/dev/null 2>"$dir/err"; then
        awk '{ printf "%.2f s | %.0f MB", $1, $2 / 1024 }' "$dir/time"
    else
        echo "fails: $(head -1 "$dir/err" | cut -c1-60) | -"
    fi
}

echo "| shape | size | bytes | check | check RSS | compile | compile RSS |"
echo "|---|---|---|---|---|---|---|"
for shape in let tuple cons elseif match defs; do
    for n in ${sizes[@]}; do
        gen "$shape" "$n" >"$dir/p.relay"
        bytes=$(stat -c %s "$dir/p.relay")
        check=$(measure "$bin" check "$dir/p.relay")
        compile=$(measure "$bin" compile "$dir/p.relay" -o "$dir/p.rvm")
        echo "| $shape | $n | $bytes | $check | $compile |"
    done
done
