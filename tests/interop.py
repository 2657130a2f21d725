#!/usr/bin/env python3
"""Parquet written by Talus opens in other implementations.

Usage: python3 tests/interop.py PATH/TO/talus

Ingests shipped LAS/LAZ files from data/las/ with the talus binary, then reads the
Parquet with pyarrow and DuckDB and checks row counts, column types, the unit metadata,
the provenance and, when laspy is importable, the coordinates against laspy's reading of
the same file. Each reader is skipped with a printed reason when it cannot be imported.
Exit status is non-zero on any failed check.
"""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "data", "las")
FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def ingest(talus, inputs, out):
    cmd = [talus, "ingest", *inputs, "--out", out, "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"talus ingest {' '.join(os.path.basename(i) for i in inputs)}: {r.stderr.strip()}")


def with_pyarrow(path, n, name):
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        print(f"skip pyarrow: not importable ({e})")
        return
    t = pq.read_table(path)
    check(t.num_rows == n, f"pyarrow {name}: {t.num_rows} rows (expected {n})")
    schema = t.schema
    check(str(schema.field("x").type) == "double", f"pyarrow {name}: x is double")
    check(str(schema.field("classification").type) == "uint8", f"pyarrow {name}: classification is uint8")
    check(str(schema.field("scan_angle").type) == "float", f"pyarrow {name}: scan_angle is float32")
    unit = (schema.field("scan_angle").metadata or {}).get(b"unit")
    check(unit == b"deg", f"pyarrow {name}: scan_angle unit metadata {unit!r}")
    meta = pq.read_metadata(path).metadata or {}  # the file's key-value metadata
    check(meta.get(b"talus:stage") == b"ingest", f"pyarrow {name}: provenance stage")
    headers = json.loads(meta.get(b"las:header", b"[]"))
    check(len(headers) == 1 and headers[0]["point_count"] == n, f"pyarrow {name}: las:header point_count")
    return t


def with_duckdb(path, n, name, has_extra):
    try:
        import duckdb
    except ImportError as e:
        print(f"skip duckdb: not importable ({e})")
        return
    con = duckdb.connect()
    rows = con.execute(f"SELECT count(*), min(x), max(z) FROM read_parquet('{path}')").fetchone()
    check(rows[0] == n, f"duckdb {name}: {rows[0]} rows (expected {n})")
    by_class = con.execute(
        f"SELECT classification, count(*) FROM read_parquet('{path}') GROUP BY 1 ORDER BY 1"
    ).fetchall()
    check(sum(c for _, c in by_class) == n, f"duckdb {name}: class counts {by_class}")
    kv = con.execute(f"SELECT decode(key), decode(value) FROM parquet_kv_metadata('{path}')").fetchall()
    keys = {k for k, _ in kv}
    check({"talus:stage", "talus:config", "talus:inputs", "las:header"} <= keys, f"duckdb {name}: key-value metadata {sorted(keys)}")
    if has_extra:
        cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()]
        check("Time" in cols and "Colors" in cols, f"duckdb {name}: extra-bytes columns {cols[-6:]}")
    return rows


def with_laspy(las_path, table, name):
    try:
        import laspy
        import numpy as np
    except ImportError as e:
        print(f"skip laspy comparison: not importable ({e})")
        return
    if table is None:
        return
    try:
        las = laspy.read(las_path)
    except Exception as e:  # LAZ without a backend
        print(f"skip laspy comparison for {name}: {e}")
        return
    x = table.column("x").to_numpy()
    z = table.column("z").to_numpy()
    check(np.array_equal(x, np.asarray(las.x)), f"laspy {name}: x identical")
    check(np.array_equal(z, np.asarray(las.z)), f"laspy {name}: z identical")
    cls = table.column("classification").to_numpy()
    check(np.array_equal(cls, np.asarray(las.classification)), f"laspy {name}: classification identical")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    talus = os.path.abspath(sys.argv[1])
    if not os.path.exists(talus):
        print(f"FAIL talus binary not found: {talus}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name, n, extra in [("autzen.laz", 106, False), ("autzen.las", 106, False), ("extrabytes.laz", 1065, True)]:
            src = os.path.join(DATA, name)
            out = os.path.join(tmp, name + ".parquet")
            ingest(talus, [src], out)
            if not os.path.exists(out):
                continue
            table = with_pyarrow(out, n, name)
            with_duckdb(out, n, name, extra)
            with_laspy(src, table, name)
    if FAILURES:
        print(f"{len(FAILURES)} interop check(s) failed")
        return 1
    print("interop: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
