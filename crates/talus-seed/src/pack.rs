//! The paving: blocks of one size, long edge vertical, rotated by the azimuth about z,
//! arranged in straight strips (width b, along body axis 1) whose positions, and the
//! positions of the columns inside each strip, are chosen on a lattice of step
//! ((a + gap)/m, (b + gap)/m) to maximise the number of blocks; each column holds as many
//! blocks as fit between the highest floor and the lowest ceiling under its footprint.
//!
//! Both choices are weighted-interval problems solved exactly by dynamic programming:
//! inside strip j, with `val(i)` the blocks of the column starting at lattice position i,
//! `F(i) = max(F(i−1), val(i−1) + F(i−k_a))` (columns at least a + gap apart); over strips,
//! the same recursion on the strips' best values (strips at least b + gap apart). Any
//! global paving offset is one of the lattice's choices, so the offset search is part of
//! the optimum.

use crate::boxes::Block;
use crate::void::{Outline, TinFloor, Void};
use nalgebra::{UnitQuaternion, Vector3};
use rayon::prelude::*;

/// What to pave with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paving {
    /// Edges (a, b, c), m; c is vertical.
    pub size: [f64; 3],
    /// Direction of body axis 1 (edge a), radians counter-clockwise from east.
    pub azimuth: f64,
    /// Lattice positions per block edge.
    pub lattice: usize,
    /// Free space between neighbouring blocks, m.
    pub gap: f64,
    /// Free space between the floor and the lowest block of a column, m.
    pub clearance: f64,
    /// Least fraction of a block's volume below the pre-event surface (1 = wholly).
    pub min_inside: f64,
    /// Edge c of each block: the class's, or fitted to its column.
    pub thickness: Thickness,
    /// With [`Thickness::Fit`]: the least and largest edge c, as multiples of c.
    pub thickness_range: [f64; 2],
    /// At most this volume, m³: blocks are taken in strip, column, level order while
    /// their volume stays within it plus half a block of the nominal size (so with one
    /// thickness, round(max_volume / a b c) blocks); the space of the others stays free
    /// for later classes. None = as many as fit.
    pub max_volume: Option<f64>,
}

/// Geometric tolerance of the containment tests, m.
pub const TOL: f64 = 1e-6;

/// Exact weighted-interval selection on a lattice: `val[i]` is the value of an item at
/// position i, items at least `k` positions apart. Returns the best total and positions.
fn select(val: &[u64], k: usize) -> (u64, Vec<usize>) {
    let n = val.len();
    let mut f = vec![0u64; n + 1];
    let mut take = vec![false; n + 1];
    for i in 1..=n {
        let p = i - 1;
        let with = val[p] + f[(p + 1).saturating_sub(k)];
        if val[p] > 0 && with > f[i - 1] {
            f[i] = with;
            take[i] = true;
        } else {
            f[i] = f[i - 1];
        }
    }
    let mut chosen = Vec::new();
    let mut i = n;
    while i > 0 {
        if take[i] {
            chosen.push(i - 1);
            i = (i - 1 + 1).saturating_sub(k);
        } else {
            i -= 1;
        }
    }
    chosen.reverse();
    (f[n], chosen)
}

/// Lattice positions between two blocks of edge `e` with step `h` and `gap`.
fn spacing(e: f64, gap: f64, h: f64) -> usize {
    (((e + gap) / h) - 1e-9).ceil().max(1.0) as usize
}

/// How blocks are stacked.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Stacking {
    /// Vertical columns: one footprint layout, each column stacked from its own floor.
    Columns,
    /// Horizontal levels of height c: each level gets its own footprint layout (best
    /// for steep walls, where a column's floor varies a lot across its footprint).
    Levels,
    /// Both, keeping the one with more volume (columns on a tie).
    Best,
}

/// Edge c of the blocks of a class.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Thickness {
    /// Every block is c thick: a column of height h holds ⌊(h + gap)/(c + gap)⌋ blocks
    /// and leaves the rest of its height to smaller classes.
    #[default]
    Fixed,
    /// The blocks of a column share its height: the fewest blocks n no thicker than the
    /// range's largest multiple of c, each (h + gap)/n − gap thick; a column where that
    /// is below the range's least multiple is left to smaller classes. Edge c then varies
    /// from column to column with the void's thickness, as the spacing of a rock mass's
    /// bedding joints does, and a column leaves no room under the ceiling. Only columns
    /// are fitted: with `stacking = "levels"` blocks keep c.
    Fit,
}

/// Blocks stacked at lattice footprint (i, j): `n` blocks `t` thick from `base` up.
struct Stack {
    i: usize,
    j: usize,
    base: f64,
    n: u32,
    t: f64,
}

/// Pave `void` (cells touched by blocks have their floor raised to the top of the
/// highest block over them, so a later size class only uses what is left). Returns the
/// blocks in strip, column, level order.
pub fn pave(
    void: &mut Void,
    outline: Option<&Outline>,
    terrain: Option<&TinFloor>,
    p: &Paving,
    stacking: Stacking,
    progress: &dyn talus_io::Progress,
) -> Vec<Block> {
    let [a, b, c] = p.size;
    // The thinnest block a column may hold.
    let c_min = match p.thickness {
        Thickness::Fixed => c,
        Thickness::Fit => p.thickness_range[0] * c,
    };
    let (e1, e2) = ([p.azimuth.cos(), p.azimuth.sin()], [-p.azimuth.sin(), p.azimuth.cos()]);
    let g = void.grid;
    let origin = [g.x0, g.y0];
    // Extent of the fillable cells in the rotated frame (u along e1, v along e2).
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for r in 0..g.ny {
        for cc in 0..g.nx {
            if !void.fillable[r * g.nx + cc] {
                continue;
            }
            for (dx, dy) in [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)] {
                let x = (cc as f64 + dx) * g.cell;
                let y = (r as f64 + dy) * g.cell;
                let (u, v) = (x * e1[0] + y * e1[1], x * e2[0] + y * e2[1]);
                lo = [lo[0].min(u), lo[1].min(v)];
                hi = [hi[0].max(u), hi[1].max(v)];
            }
        }
    }
    if !(hi[0] - lo[0] >= a - TOL && hi[1] - lo[1] >= b - TOL) {
        return Vec::new();
    }
    // The lattice's step divides an edge plus the gap: neighbouring blocks are then m steps
    // apart, exactly a + gap (a step of a/m would leave them m + 1 steps apart whatever
    // the gap, a twelfth of a block lost between every two at the default lattice).
    let m = p.lattice.max(1) as f64;
    let (hu, hv) = ((a + p.gap) / m, (b + p.gap) / m);
    let nu = ((hi[0] - lo[0] - a) / hu + 1e-9).floor() as usize + 1;
    let nv = ((hi[1] - lo[1] - b) / hv + 1e-9).floor() as usize + 1;
    let (ku, kv) = (spacing(a, p.gap, hu), spacing(b, p.gap, hv));
    let centre = |i: usize, j: usize| {
        let (u, v) = (lo[0] + i as f64 * hu + 0.5 * a, lo[1] + j as f64 * hv + 0.5 * b);
        [origin[0] + u * e1[0] + v * e2[0], origin[1] + u * e1[1] + v * e2[1]]
    };
    let half = [0.5 * a, 0.5 * b];
    let corners_inside = |ctr: [f64; 2]| {
        outline.is_none_or(|o| {
            [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)].iter().all(|(s1, s2)| {
                let x = ctr[0] + s1 * half[0] * e1[0] + s2 * half[1] * e2[0];
                let y = ctr[1] + s1 * half[0] * e1[1] + s2 * half[1] * e2[1];
                o.contains(x, y, TOL)
            })
        })
    };
    // (floor + clearance, ceiling) of every lattice footprint; empty when it leaves the void.
    progress.start("footprints", nv as u64);
    let v: &Void = void;
    let columns: Vec<Vec<(f64, f64)>> = (0..nv)
        .into_par_iter()
        .map(|j| {
            let row = (0..nu)
                .map(|i| {
                    let ctr = centre(i, j);
                    let col = v.column(ctr, e1, e2, half, TOL, c, p.min_inside).map(|mut col| {
                        // The simulation's terrain must not reach into the column.
                        if let Some(top) = terrain.and_then(|t| t.max_over(ctr, e1, e2, half)) {
                            col.floor = col.floor.max(top);
                        }
                        col
                    });
                    match col {
                        Some(col)
                            if col.ceiling - col.floor - p.clearance >= c_min - TOL
                                && corners_inside(ctr) =>
                        {
                            (col.floor + p.clearance, col.ceiling)
                        }
                        _ => (f64::INFINITY, f64::NEG_INFINITY),
                    }
                })
                .collect();
            progress.inc(1);
            row
        })
        .collect();
    progress.finish();
    // Best layout for a value function over footprints: (blocks, [(j, [i])]).
    let layout = |val: &(dyn Fn(usize, usize) -> u64 + Sync)| {
        let strips: Vec<(u64, Vec<usize>)> = (0..nv)
            .into_par_iter()
            .map(|j| select(&(0..nu).map(|i| val(i, j)).collect::<Vec<_>>(), ku))
            .collect();
        let row_vals: Vec<u64> = strips.iter().map(|s| s.0).collect();
        let (total, rows) = select(&row_vals, kv);
        (total, rows.into_iter().map(|j| (j, strips[j].1.clone())).collect::<Vec<_>>())
    };
    // Blocks of a column and their thickness.
    let stack = |i: usize, j: usize| {
        let (floor, ceiling) = columns[j][i];
        let room = ceiling - floor;
        if room < c_min - TOL {
            return (0, c);
        }
        match p.thickness {
            Thickness::Fixed => (((room + p.gap + TOL) / (c + p.gap)).floor() as u32, c),
            Thickness::Fit => {
                let c_max = p.thickness_range[1] * c;
                let n = ((room + p.gap) / (c_max + p.gap) - 1e-9).ceil().max(1.0);
                let t = (room + p.gap) / n - p.gap;
                if t < c_min - TOL { (0, c) } else { (n as u32, t) }
            }
        }
    };
    // A column's value to the layout: its blocks, or with fitted thickness its height in
    // mm (the volume in units of a b mm).
    let value = |i: usize, j: usize| -> u64 {
        let (n, t) = stack(i, j);
        match p.thickness {
            Thickness::Fixed => n as u64,
            Thickness::Fit => (n as f64 * t * 1e3).round() as u64,
        }
    };
    let mut placed: Vec<Stack> = Vec::new();
    if matches!(stacking, Stacking::Columns | Stacking::Best) {
        let (_, rows) = layout(&value);
        for (j, is) in rows {
            for i in is {
                let (n, t) = stack(i, j);
                placed.push(Stack { i, j, base: columns[j][i].0, n, t });
            }
        }
    }
    if matches!(stacking, Stacking::Levels | Stacking::Best) {
        let (mut zmin, mut zmax) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(f, cl) in columns.iter().flatten() {
            if f.is_finite() {
                zmin = zmin.min(f);
                zmax = zmax.max(cl);
            }
        }
        let pitch = c + p.gap;
        let offsets = p.lattice.max(1);
        let mut best: (u64, Vec<Stack>) = (0, Vec::new());
        if zmin.is_finite() {
            for o in 0..offsets {
                let z0 = zmin + o as f64 * pitch / offsets as f64;
                let levels = ((zmax - z0 + p.gap) / pitch + 1e-9).floor().max(0.0) as usize;
                let mut total = 0;
                let mut blocks = Vec::new();
                for k in 0..levels {
                    let zl = z0 + k as f64 * pitch;
                    let fits = |i: usize, j: usize| {
                        let (f, cl) = columns[j][i];
                        u64::from(f <= zl + TOL && cl >= zl + c - TOL)
                    };
                    let (n, rows) = layout(&fits);
                    total += n;
                    for (j, is) in rows {
                        blocks.extend(is.into_iter().map(|i| Stack { i, j, base: zl, n: 1, t: c }));
                    }
                }
                if total > best.0 {
                    best = (total, blocks);
                }
            }
        }
        // Compared by volume (footprints are equal, so by the summed thickness).
        let height = |x: &[Stack]| -> f64 { x.iter().map(|s| s.n as f64 * s.t).sum() };
        if height(&best.1) > height(&placed) + TOL {
            placed = best.1;
        }
    }
    let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), p.azimuth);
    let mut blocks = Vec::new();
    let (mut volume, nominal) = (0.0, a * b * c);
    let cap = p.max_volume.map_or(f64::INFINITY, |v| v + 0.5 * nominal);
    'columns: for Stack { i, j, base, n, t } in placed {
        let ctr = centre(i, j);
        let mut top = base;
        for k in 0..n {
            if volume + a * b * t > cap {
                if k > 0 {
                    raise_floor(void, ctr, e1, e2, half, top);
                }
                break 'columns;
            }
            volume += a * b * t;
            let z = base + 0.5 * t + k as f64 * (t + p.gap);
            blocks.push(Block::at_rest([a, b, t], [ctr[0], ctr[1], z], q));
            top = base + (k + 1) as f64 * (t + p.gap);
        }
        // Raise the floor of every touched cell to the top of this column.
        raise_floor(void, ctr, e1, e2, half, top);
    }
    blocks
}

fn raise_floor(void: &mut Void, c: [f64; 2], e1: [f64; 2], e2: [f64; 2], h: [f64; 2], top: f64) {
    let g = void.grid;
    let (h1, h2) = (h[0] - TOL, h[1] - TOL);
    let ex = h1 * e1[0].abs() + h2 * e2[0].abs();
    let ey = h1 * e1[1].abs() + h2 * e2[1].abs();
    let c0 = ((c[0] - ex - g.x0) / g.cell).floor().max(0.0) as usize;
    let c1 = (((c[0] + ex - g.x0) / g.cell).floor() as usize).min(g.nx - 1);
    let r0 = ((c[1] - ey - g.y0) / g.cell).floor().max(0.0) as usize;
    let r1 = (((c[1] + ey - g.y0) / g.cell).floor() as usize).min(g.ny - 1);
    let s = 0.5 * g.cell;
    let (s1, s2) = (s * (e1[0].abs() + e1[1].abs()), s * (e2[0].abs() + e2[1].abs()));
    for r in r0..=r1 {
        for cc in c0..=c1 {
            let m = void.centre(r, cc);
            let d = [m[0] - c[0], m[1] - c[1]];
            if (d[0] * e1[0] + d[1] * e1[1]).abs() >= h1 + s1
                || (d[0] * e2[0] + d[1] * e2[1]).abs() >= h2 + s2
            {
                continue;
            }
            let i = r * g.nx + cc;
            void.z_post[i] = void.z_post[i].max(top);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_selection_is_optimal() {
        // Items of length 3: positions 0 and 4 (6 + 5) beat 1 and 4 (5 + 5).
        let (v, chosen) = select(&[6, 5, 0, 0, 5, 0], 3);
        assert_eq!((v, chosen), (11, vec![0, 4]));
        assert_eq!(select(&[1, 1, 1, 1], 1), (4, vec![0, 1, 2, 3]));
        assert_eq!(select(&[0, 0], 2), (0, vec![]));
    }
}
