"""An upper estimate of what boxes wholly inside the default site's scar can fill.

Outside the product (docs/benchmarks.md, Session 47). Reads the DoD of `make pipeline`
(runs/piton-marcel/diff/dod.parquet), takes the void's thickness normal to the scar's
floor as the vertical thickness times cos(48.3°) (the floor's dip), and resamples it on a
0.5 m grid of the floor plane (u along the strike, v up the dip). Columns are then placed
on a quadtree: every footprint starts at A x B; a footprint whose column (the least
thickness over it, the blocks being boxes) would leave more than `waste` of the void over
it empty is halved along its longer edge (relative to the least footprint), down to
a_min x b_min. A column holds the fewest blocks no thicker than c_max, all of one
thickness, and none when that is thinner than c_min. It ignores what the seeder must also
respect (the scar's outline at the corners, the terrain TIN, the clearance and the
resampling), so it is an upper estimate.

    python3 docs/experiments/fill_bound/quadtree.py [runs/piton-marcel/diff/dod.parquet]
"""

import sys

import numpy as np
import pyarrow.parquet as pq
from scipy.interpolate import RegularGridInterpolator

RES = 0.5
DIP = np.radians(48.3)


def thickness_grid(path):
    t = pq.read_table(path).to_pandas()
    nr, nc = t.row.max() + 1, t.col.max() + 1
    h = np.zeros((nr, nc))
    scar = t.zone_id == 0
    h[t.row[scar], t.col[scar]] = np.maximum(-t.dz[scar], 0)
    ys = t.groupby("row").y.first().values
    xs = t.x.min() + np.arange(nc) * 5.0
    f = RegularGridInterpolator((ys, xs), h * np.cos(DIP), bounds_error=False, fill_value=0.0)
    rows = h.any(axis=1)
    y0, y1 = ys[rows].min() - 5, ys[rows].max() + 5
    u = np.arange(xs.min(), xs.max(), RES)
    v = np.arange(0, (y1 - y0) / np.cos(DIP), RES)
    grid = f(np.stack(np.meshgrid(y0 + v * np.cos(DIP), u, indexing="ij"), -1))
    return grid, h.sum() * 25.0


def fill(g, total, a, b, a_min, b_min, c_max, waste, c_min):
    thick, vol = [], 0.0
    na, nb = int(a / RES), int(b / RES)
    todo = [(i, j, nb, na) for i in range(0, g.shape[0], nb) for j in range(0, g.shape[1], na)]
    while todo:
        i, j, hb, ha = todo.pop()
        sub = g[i : i + hb, j : j + ha]
        if sub.size == 0 or sub.mean() <= 0.05:
            continue
        m = sub.min() if sub.shape == (hb, ha) else 0.0
        if 1 - m * sub.size / sub.sum() > waste and (ha * RES > a_min * 1.01 or hb * RES > b_min * 1.01):
            if hb * RES > b_min * 1.01 and hb / max(b_min / RES, 1) >= ha / max(a_min / RES, 1):
                k = hb // 2
                todo += [(i, j, k, ha), (i + k, j, hb - k, ha)]
            else:
                k = ha // 2
                todo += [(i, j, hb, k), (i, j + k, hb, ha - k)]
            continue
        if m < c_min:
            continue
        n = int(np.ceil(m / c_max))
        thick += [m / n] * n
        vol += m * sub.size * RES * RES
    return len(thick), vol / total


def main():
    g, total = thickness_grid(sys.argv[1] if len(sys.argv) > 1 else "runs/piton-marcel/diff/dod.parquet")
    print(f"void {total:.0f} m3 (vertical), {g.sum() * RES * RES:.0f} m3 on the floor's grid")
    print("| A x B | a_min x b_min | c_min-c_max | waste | blocks | fill |")
    print("|---|---|---|---|---|---|")
    for a, b, amin, bmin, cmin, cmax, w in [
        (16, 11, 8, 5.5, 0.3, 16, 1.0),
        (16, 11, 8, 5.5, 0.3, 16, 0.2),
        (16, 11, 8, 5.5, 0.3, 16, 0.1),
        (16, 11, 8, 5.5, 2.0, 16, 0.1),
        (16, 11, 4, 2.75, 2.0, 16, 0.1),
    ]:
        n, f = fill(g, total, a, b, amin, bmin, cmax, w, cmin)
        print(f"| {a} x {b} | {amin} x {bmin} | {cmin}-{cmax} m | {w} | {n} | {100 * f:.1f} % |")


if __name__ == "__main__":
    main()
