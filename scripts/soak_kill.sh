#!/usr/bin/env bash
# Crash-safety soak: kill `talus pipeline` (SIGKILL) at random moments, run it again, and
# check each time that it finishes with every Parquet file byte-identical to an
# uninterrupted pipeline's, that no temporary file is left, and that no file outside the
# pipeline's output directory changed (the site file, the shipped inputs, a user's file).
#
#   scripts/soak_kill.sh [ROUNDS] [TALUS]       (defaults: 20, target/release/talus)
#
# SOAK_SIGNAL=TERM (or INT, HUP) stops it with that signal instead, which talus catches:
# then each round also checks, before the re-run, that the stopped pipeline ended by the
# signal and left neither a temporary file nor a checkpoint segment in progress.
#
# The site is the thesis heap N = 1000 (700 steps, checkpoints every 100,
# wall_times = false), about 5 s per pipeline on 2 cores, so 20 rounds take about 3
# minutes. Needs a release build (`cargo build --release`). Exits non-zero at the first
# round that fails, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
signal=${SOAK_SIGNAL:-KILL}
talus=${2:-${CARGO_TARGET_DIR:-target}/release/talus}
[ -x "$talus" ] || { echo "soak: $talus not found; run cargo build --release first" >&2; exit 2; }
repo=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/site.toml" <<EOF
[site]
name = "soak"

[inputs]
thesis_dir = "$repo/data/thesis-granular"
thesis_n = 1000

[run]
dt = 0.001
steps = 700
kappa = { mode = "thesis", factor = 0.5 }
planes = [{ point = [0.0, 0.0, 0.0], normal = [0.0, 0.0, 1.0] }]
output_every = 10
gravity = 9.80665
solver = { method = "warm", tolerance = 1e-9, max_iterations = 200, fallback_tolerance = 1e-9 }
checkpoint_every = 100
allow_initial_overlap = true
wall_times = false
EOF
echo "a user's notes, not Talus's" > "$work/notes.txt"

# Checksums of everything outside the output directory that a run could touch.
outside() {
    (cd "$work" && sha256sum site.toml notes.txt) 
    sha256sum "$repo"/data/thesis-granular/*_1000.data
}
parquet_sums() { (cd "$1" && find . -name '*.parquet' -print0 | sort -z | xargs -0 sha256sum); }

before=$(outside)
start=$(date +%s.%N)
(cd "$work" && "$talus" pipeline site.toml --out ref -q)
span=$(echo "$(date +%s.%N) - $start" | bc)
ref=$(parquet_sums "$work/ref")
echo "soak: reference pipeline ${span} s, $(echo "$ref" | wc -l) Parquet files"

for i in $(seq 1 "$rounds"); do
    rm -rf "$work/out"
    # A moment between 0 and the pipeline's length (milliseconds).
    frac=$((RANDOM % 1000))
    delay=$(echo "scale=3; $frac * $span / 1000" | bc)
    (cd "$work" && exec "$talus" pipeline site.toml --out out -q) &
    pid=$!
    sleep "$delay"
    kill -"$signal" "$pid" 2>/dev/null || true
    status=0
    wait "$pid" 2>/dev/null || status=$?
    if [ "$signal" != KILL ] && [ "$status" != 0 ]; then
        want=$((128 + $(kill -l "$signal")))
        if [ "$status" != "$want" ]; then
            echo "soak: round $i: exit status $status after SIG$signal, want $want" >&2
            exit 1
        fi
        stray=$(find "$work/out" \( -name '.*.tmp' -o -name '.*.tmp.png' -o -name '.segment_*' \) 2>/dev/null)
        if [ -n "$stray" ]; then
            echo "soak: round $i: left after SIG$signal at ${delay} s:" $stray >&2
            exit 1
        fi
    fi
    stage=$(ls "$work/out" 2>/dev/null | tr '\n' ' ' || true)
    ckpt=$(ls "$work/out/run/checkpoints" 2>/dev/null | grep -c step_ || true)
    if ! (cd "$work" && "$talus" pipeline site.toml --out out -q); then
        echo "soak: round $i: the pipeline failed after a kill at ${delay} s" >&2
        exit 1
    fi
    got=$(parquet_sums "$work/out")
    if [ "$got" != "$ref" ]; then
        echo "soak: round $i: outputs differ after a kill at ${delay} s:" >&2
        diff <(echo "$ref") <(echo "$got") >&2 || true
        exit 1
    fi
    left=$(find "$work/out" -name '.*.tmp' -o -name '.*.tmp.png' | wc -l)
    if [ "$left" != 0 ]; then
        echo "soak: round $i: $left temporary files left" >&2
        exit 1
    fi
    if [ "$(outside)" != "$before" ]; then
        echo "soak: round $i: a file outside the output directory changed" >&2
        exit 1
    fi
    echo "soak: round $i: SIG$signal at ${delay} s (exit $status; left in out/: ${stage:-nothing}; checkpoints: $ckpt): re-run identical"
done
echo "soak: $rounds rounds of SIG$signal, every re-run byte-identical, nothing outside the outputs changed"
