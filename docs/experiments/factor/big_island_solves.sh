#!/bin/bash
# Sums the per-solve lines (ADMMT, from f32_solves.patch) of one run of the thesis heap
# N = 3000 (or $N), μ = 0.5 (or $MU), 1e-6, one thread, for the islands of more than 1500
# bodies: solves, mean iterations and factorisations, their time.
# usage: BIN=<peers bench binary> big_island_solves.sh label [ENV=VAL ...]
# (run from crates/talus-engine; the log goes to ${LOGS:-/tmp}/log_<label>.txt)
label=$1; shift
log=${LOGS:-/tmp}/log_$label.txt
env "$@" TALUS_ADMM_TIME=1 TALUS_BENCH_THREADS=1 TALUS_BENCH_N=${N:-3000} TALUS_BENCH_MU=${MU:-0.5} \
    TALUS_BENCH_TOL=1e-6 TALUS_BENCH_PEERS= "$BIN" --bench > "$log" 2>&1
python3 - "$log" "$label" <<'PY'
import sys
f, label = sys.argv[1], sys.argv[2]
lines = open(f).read().split('\n')
rows = [l.split()[1:] for l in lines if l.startswith('ADMMT')]
big = [r for r in rows if int(r[0]) > 1500]
talus = [l for l in lines if '| talus' in l][0].split('|')
n = len(big)
print(label, 'total', talus[5].strip(), 'big solves', n,
      'it', round(sum(int(r[2]) for r in big) / n, 1),
      'fact', round(sum(int(r[3]) for r in big) / n, 2),
      'time', round(sum(float(r[4]) for r in big), 2), talus[9].strip()[:40])
PY
