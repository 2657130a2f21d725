#!/usr/bin/env python3
"""Parquet written by Talus opens in other implementations.

Usage: python3 tests/interop.py PATH/TO/talus

Ingests shipped LAS/LAZ files from data/las/ with the talus binary, then reads the
Parquet with pyarrow and DuckDB and checks row counts, column types, the unit metadata,
the provenance and, when laspy is importable, the coordinates against laspy's reading of
the same file. Then runs `talus pipeline` on a small synthetic site and reads every
GeoParquet file (zones, blocks, final state, thickness) with GeoPandas and with GDAL
(pyogrio): CRS EPSG:32620, row counts, Z on the blocks' centres; and the DoD GeoTIFFs
(dz, LoD, significance) with rasterio: CRS, transform and every value equal to the
DoD table's; the run's ParaView series (run/paraview/) with the VTK package and meshio; and
the report in headless Chromium (a screenshot; TALUS_REPORT_SCREENSHOT=path keeps it).
Each reader is skipped
with a printed reason when it cannot be imported. Exit status is non-zero on any failed
check.
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


SITE = """
[site]
name = "interop"

[inputs]
synth = true

[synth]
seed = 7
extent = [200.0, 160.0]
scale = 0.3
truth_cell = 2.0
terrain = { cliff_height = 40.0, foot_y = 90.0, river_y = 20.0 }
scar = { volume = 6000.0, width = 80.0 }
vegetation = { cover = 0.0 }

[seed]
size = [1.5, 1.5, 2.0]
clearance = 0.01

[run]
dt = 0.05
steps = 20
output_every = 5
kappa = { mode = "restitution", e = 0.2, tangential_ratio = 1.0 }

[compare]
figure_width = 800
figure_height = 600
"""

GEOPARQUET = ["diff/zones.parquet", "seed/blocks.parquet", "run/final.parquet", "compare/thickness.parquet", "compare/trajectory_lines.parquet"]


def with_geopandas(talus, tmp):
    try:
        import geopandas
        import pyarrow.parquet as pq
    except ImportError as e:
        print(f"skip GeoParquet checks: {e}")
        return
    site = os.path.join(tmp, "site.toml")
    with open(site, "w") as f:
        f.write(SITE)
    out = os.path.join(tmp, "runs", "interop")
    r = subprocess.run([talus, "pipeline", site, "--out", out], capture_output=True, text=True, cwd=tmp)
    check(r.returncode == 0, f"talus pipeline (synthetic site): {r.stderr.strip()[-500:]}")
    if r.returncode != 0:
        return
    try:
        import pyogrio
        if "Parquet" not in pyogrio.list_drivers():
            print(f"skip GDAL (pyogrio) checks: GDAL {pyogrio.__gdal_version_string__} of this pyogrio has no Parquet driver")
            pyogrio = None
    except ImportError as e:
        pyogrio = None
        print(f"skip GDAL (pyogrio) checks: {e}")
    for rel in GEOPARQUET:
        path = os.path.join(out, rel)
        n = pq.ParquetFile(path).metadata.num_rows
        try:
            g = geopandas.read_parquet(path)
            ok = g.crs is not None and g.crs.to_epsg() == 32620 and len(g) == n
            check(ok, f"geopandas {rel}: {len(g)} rows, CRS {g.crs.to_epsg() if g.crs else None}")
            if "blocks" in rel or "final" in rel:
                check(bool(g.geometry.has_z.all()), f"geopandas {rel}: centres carry Z")
                check(bool((g.geometry.z == g["z"]).all()), f"geopandas {rel}: Z equals the z column")
            if "trajectory_lines" in rel:
                lines_3d = bool((g.geometry.geom_type == "LineString").all() and g.geometry.has_z.all())
                # The 3-D length recomputed by shapely's coordinates equals the column.
                import numpy as np
                lengths = [float(np.sum(np.linalg.norm(np.diff(np.asarray(geom.coords), axis=0), axis=1))) for geom in g.geometry]
                same = bool(np.allclose(lengths, g["length"], rtol=1e-12, atol=1e-9))
                check(lines_3d and same, f"geopandas {rel}: 3-D lines whose lengths equal the length column")
        except Exception as e:  # noqa: BLE001 - report any reader failure as a check
            check(False, f"geopandas {rel}: {type(e).__name__}: {e}")
        if pyogrio is None:
            continue
        try:
            info = pyogrio.read_info(path)
            crs = info.get("crs") or ""
            check(info["features"] == n and crs.endswith("32620"), f"GDAL {rel}: {info['features']} features, CRS {crs}")
        except Exception as e:  # noqa: BLE001
            check(False, f"GDAL {rel}: {type(e).__name__}: {e}")
    with_rasterio(out)
    with_laspy_fields(out)
    with_paraview(out)
    with_chromium(out)


def with_chromium(out):
    """The report in headless Chromium (the distribution's package): every figure is
    embedded and captioned, and the page renders (a screenshot that is not blank). With
    TALUS_REPORT_SCREENSHOT=path the screenshot is kept there for a look."""
    import re
    import shutil
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("skip report screenshot: chromium is not installed (apt-get install chromium)")
        return
    report = os.path.join(out, "compare", "report.html")
    html = open(report, encoding="utf-8").read()
    imgs = re.findall(r"<img [^>]*src=\"data:image/png;base64,", html)
    captions = re.findall(r"<figcaption", html)
    check(len(imgs) >= 6 and len(captions) >= len(imgs), f"report.html: {len(imgs)} embedded figures, {len(captions)} captions")
    shot = os.path.join(out, "report.png")
    r = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={os.path.join(out, 'chromium-profile')}", "--hide-scrollbars",
         "--window-size=1400,9000", f"--screenshot={shot}", "file://" + report],
        capture_output=True, text=True, timeout=120,
    )
    if not os.path.exists(shot):
        check(False, f"chromium screenshot of report.html: {r.stderr.strip()[-300:]}")
        return
    try:
        from PIL import Image
        im = Image.open(shot).convert("RGB")
        small = im.resize((140, 900))
        colours = len(set(small.tobytes()[k:k + 3] for k in range(0, len(small.tobytes()), 3)))
        check(colours > 200, f"chromium screenshot of report.html: {im.size[0]}x{im.size[1]}, {colours} colours (not blank)")
    except ImportError:
        check(os.path.getsize(shot) > 100_000, f"chromium screenshot of report.html: {os.path.getsize(shot)} bytes")
    keep = os.environ.get("TALUS_REPORT_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
        print(f"     screenshot kept in {keep}")


def with_paraview(out):
    """run/paraview/: the VTK package and meshio open the series; boxes sit at the
    trajectories' centres; the terrain has the TIN's triangles."""
    import xml.etree.ElementTree as ET
    try:
        import numpy as np
        import pyarrow.parquet as pq
    except ImportError as e:
        print(f"skip ParaView checks: {e}")
        return
    pv = os.path.join(out, "run", "paraview")
    try:
        frames = [(float(d.get("timestep")), d.get("file")) for d in ET.parse(os.path.join(pv, "blocks.pvd")).getroot().iter("DataSet")]
    except Exception as e:  # noqa: BLE001
        check(False, f"ParaView collection blocks.pvd: {type(e).__name__}: {e}")
        return
    traj = pq.read_table(os.path.join(out, "run", "trajectories.parquet")).to_pandas()
    steps = sorted(traj["step"].unique())
    check(len(frames) == len(steps), f"blocks.pvd: {len(frames)} time steps, trajectories have {len(steps)}")
    last = traj[traj["step"] == steps[-1]].sort_values("id")
    tris = pq.read_table(os.path.join(out, "terrain", "triangles.parquet")).num_rows
    readers = []
    try:
        import vtk
        from vtk.util.numpy_support import vtk_to_numpy

        def with_vtk(path):
            r = vtk.vtkXMLUnstructuredGridReader()
            r.SetFileName(path)
            r.Update()
            g = r.GetOutput()
            pts = vtk_to_numpy(g.GetPoints().GetData())
            cell = {g.GetCellData().GetArrayName(i): vtk_to_numpy(g.GetCellData().GetArray(i)) for i in range(g.GetCellData().GetNumberOfArrays())}
            types = {g.GetCellType(i) for i in range(g.GetNumberOfCells())}
            return g.GetNumberOfCells(), pts, cell, types

        readers.append(("vtk " + vtk.vtkVersion.GetVTKVersion(), with_vtk))
        # The collection itself, as ParaView plays it.
        pr = vtk.vtkPVDReader() if hasattr(vtk, "vtkPVDReader") else None
        if pr is not None:
            pr.SetFileName(os.path.join(pv, "blocks.pvd"))
            pr.UpdateInformation()
            check(pr.GetNumberOfTimeSteps() == len(frames), f"vtk vtkPVDReader: {pr.GetNumberOfTimeSteps()} time steps")
    except ImportError as e:
        print(f"skip vtk checks: {e}")
    try:
        import meshio

        def with_meshio(path):
            m = meshio.read(path)
            n = sum(len(c.data) for c in m.cells)
            cell = {k: np.concatenate(v) for k, v in m.cell_data.items()}
            types = {c.type for c in m.cells}
            return n, np.asarray(m.points), cell, types

        readers.append(("meshio " + meshio.__version__, with_meshio))
    except ImportError as e:
        print(f"skip meshio checks: {e}")
    for name, read in readers:
        try:
            n, pts, cell, types = read(os.path.join(pv, frames[-1][1]))
            centres = pts.reshape(-1, 8, 3).mean(axis=1)
            ids = np.asarray(cell["id"]).ravel()
            order = np.argsort(ids)
            same = n == len(last) and np.allclose(centres[order], last[["x", "y", "z"]].to_numpy(), atol=1e-9, rtol=0)
            check(same and len(types) == 1, f"{name} {frames[-1][1]}: {n} hexahedra centred on the last step's blocks; cell data {sorted(cell)}")
            n, pts, _, types = read(os.path.join(pv, "terrain.vtu"))
            check(n == tris and len(types) == 1, f"{name} terrain.vtu: {n} triangles (triangles.parquet: {tris})")
        except Exception as e:  # noqa: BLE001
            check(False, f"{name} ParaView series: {type(e).__name__}: {e}")


def with_laspy_fields(out):
    """diff/m3c2.laz and c2c.laz: laspy sees the scalar fields, equal to the Parquet tables."""
    try:
        import laspy
        import numpy as np
        import pyarrow.parquet as pq
    except ImportError as e:
        print(f"skip LAS scalar-field checks: {e}")
        return
    for laz, table, fields in [
        ("m3c2.laz", "m3c2.parquet", ["m3c2_distance", "m3c2_uncertainty"]),
        ("c2c.laz", "c2c.parquet", ["c2c_distance", "c2c_dz", "c2c_plane_distance"]),
    ]:
        try:
            las = laspy.read(os.path.join(out, "diff", laz))
            t = pq.read_table(os.path.join(out, "diff", table))
            names = list(las.point_format.extra_dimension_names)
            check(all(f in names for f in fields), f"laspy {laz}: scalar fields {names}")
            same = len(las.points) == t.num_rows and all(
                np.array_equal(np.asarray(las[f]), t.column(f).to_numpy(), equal_nan=True) for f in fields
            )
            near = bool(np.max(np.abs(np.asarray(las.x) - t.column("x").to_numpy()), initial=0.0) <= 5e-4)
            check(same and near, f"laspy {laz}: {len(las.points)} points, fields equal to {table}'s")
        except Exception as e:  # noqa: BLE001
            check(False, f"laspy {laz}: {type(e).__name__}: {e}")


def with_rasterio(out):
    try:
        import numpy as np
        import pyarrow.parquet as pq
        import rasterio
    except ImportError as e:
        print(f"skip GeoTIFF checks: {e}")
        return
    dod_path = os.path.join(out, "diff", "dod.parquet")
    dod = pq.read_table(dod_path)
    grid = json.loads(pq.ParquetFile(dod_path).metadata.metadata[b"talus:grid"])
    x0, y0, cell, nx, ny = grid["x0"], grid["y0"], grid["cell"], grid["nx"], grid["ny"]
    cols = {c: dod.column(c).to_numpy(zero_copy_only=False) for c in ["row", "col", "dz", "lod", "significant"]}
    for name, column in [("dod.tif", "dz"), ("lod.tif", "lod"), ("significant.tif", "significant")]:
        path = os.path.join(out, "diff", name)
        try:
            with rasterio.open(path) as r:
                check(r.crs is not None and r.crs.to_epsg() == 32620, f"rasterio {name}: CRS {r.crs}")
                t = r.transform
                ok = abs(t.a - cell) < 1e-9 and abs(t.e + cell) < 1e-9 and abs(t.c - x0) < 1e-6 and abs(t.f - (y0 + ny * cell)) < 1e-6
                check(ok and (r.width, r.height) == (nx, ny), f"rasterio {name}: {r.width}x{r.height}, transform {tuple(t)[:6]}")
                band = r.read(1)
            # Table rows: row 0 southernmost; raster row 0 northernmost.
            rr = ny - 1 - cols["row"].astype(int)
            cc = cols["col"].astype(int)
            expect = cols[column].astype("float64")
            if column == "significant":
                expect = np.where(np.isnan(cols["dz"]), np.nan, expect)
            got = band[rr, cc].astype("float64")
            same = np.allclose(got, expect.astype("float32"), equal_nan=True, rtol=0, atol=0)
            check(bool(same), f"rasterio {name}: {len(got)} cells equal to dod.parquet's {column}")
        except Exception as e:  # noqa: BLE001
            check(False, f"rasterio {name}: {type(e).__name__}: {e}")
    # Deposit thickness rasters against compare/thickness.parquet (same grid).
    th = pq.read_table(os.path.join(out, "compare", "thickness.parquet"))
    rr = ny - 1 - th.column("row").to_numpy().astype(int)
    cc = th.column("col").to_numpy().astype(int)
    for name, column in [("thickness_simulated.tif", "thickness_simulated"), ("thickness_surveyed.tif", "thickness_surveyed")]:
        try:
            with rasterio.open(os.path.join(out, "compare", name)) as r:
                check(r.crs is not None and r.crs.to_epsg() == 32620 and (r.width, r.height) == (nx, ny), f"rasterio {name}: CRS {r.crs}, {r.width}x{r.height}")
                band = r.read(1).astype("float64")
            expect = th.column(column).to_numpy(zero_copy_only=False).astype("float32").astype("float64")
            got = band[rr, cc]
            finite = np.isfinite(got)
            same = np.array_equal(got[finite], expect[finite]) and finite.sum() > 0
            check(bool(same), f"rasterio {name}: {int(finite.sum())} cells equal to thickness.parquet's {column}")
        except Exception as e:  # noqa: BLE001
            check(False, f"rasterio {name}: {type(e).__name__}: {e}")
    # Hazard maps: on the DoD grid with its CRS; every trajectory sample's cell was passed
    # by a block at least that fast (an invariant computed here from trajectories.parquet).
    traj = pq.read_table(os.path.join(out, "run", "trajectories.parquet"))
    tx, ty = traj.column("x").to_numpy(), traj.column("y").to_numpy()
    speed = np.sqrt(sum(traj.column(k).to_numpy() ** 2 for k in ["vx", "vy", "vz"]))
    bands = {}
    for name in ["hazard_max_energy.tif", "hazard_max_velocity.tif", "hazard_max_height.tif", "hazard_passes.tif"]:
        try:
            with rasterio.open(os.path.join(out, "compare", name)) as r:
                check(r.crs is not None and r.crs.to_epsg() == 32620 and (r.width, r.height) == (nx, ny), f"rasterio {name}: CRS {r.crs}, {r.width}x{r.height}")
                bands[name] = r.read(1).astype("float64")
        except Exception as e:  # noqa: BLE001
            check(False, f"rasterio {name}: {type(e).__name__}: {e}")
    if "hazard_passes.tif" in bands and "hazard_max_velocity.tif" in bands:
        c = np.floor((tx - x0) / cell).astype(int)
        r_ = np.floor((ty - y0) / cell).astype(int)
        inside = (c >= 0) & (c < nx) & (r_ >= 0) & (r_ < ny)
        rr, cc = ny - 1 - r_[inside], c[inside]
        passes = bands["hazard_passes.tif"][rr, cc]
        vmax = bands["hazard_max_velocity.tif"][rr, cc]
        ok = bool(np.all(passes >= 1) and np.all(vmax >= speed[inside].astype("float32") - 1e-3))
        check(ok, f"hazard maps: {int(inside.sum())} trajectory samples lie in passed cells at most as fast as the cell's maximum")


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
        with_geopandas(talus, tmp)
    if FAILURES:
        print(f"{len(FAILURES)} interop check(s) failed")
        return 1
    print("interop: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
