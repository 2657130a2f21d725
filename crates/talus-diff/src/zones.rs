//! Change zones and volumes.
//!
//! Significant loss cells (dz < -LoD) and significant gain cells (dz > LoD) are grouped
//! into connected regions (4- or 8-connectivity). The largest loss region is the
//! collapse `scar`, the largest gain region the `deposit`. A zone's outline is traced
//! along the cell edges: every boundary edge is oriented with the zone on its left, the
//! edges are chained into loops (turning left at a vertex shared by two diagonal cells),
//! loops are split where they touch themselves, and counter-clockwise loops become
//! exterior rings, clockwise ones holes (assigned to the smallest exterior containing
//! them).
//!
//! A zone's volume is not the sum over its significant cells alone: thresholding at the
//! LoD drops the real change of the cells below it at the zone's edge, and cells a survey
//! left empty, so that sum is biased low (Anderson 2019, ESPL 44(5)). The volume is
//! `V = sum s dz_i A` (`s = -1` for a scar, `+1` for a deposit), unthresholded, over the
//! zone's footprint ([`footprint`]): its cells, the cells it encloses and
//! `volume_margin` rings around it, less the cells significant the other way; empty cells
//! take their neighbours' mean. Noise in the footprint averages out; the error
//! ([`volume_of`], [`crate::config::VolumeError`]) covers point spread, the surveys'
//! vertical accuracy, their horizontal registration through the summed slope, and the
//! filled cells.

use crate::config::{Connectivity, VolumeError, ZonesConfig};
use crate::dod::{Dod, Grid};
use serde::Serialize;

pub use talus_io::zones::ZoneKind;

/// A volume with its 1-sigma error.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Volume {
    /// Volume, m^3 (positive for loss and gain alike).
    pub volume: f64,
    /// 1-sigma error, m^3.
    pub error: f64,
    /// Cells counted.
    pub cells: usize,
    /// Cells among them without dz, filled from their neighbours.
    pub filled: usize,
}

/// One change zone.
#[derive(Debug, Clone, Serialize)]
pub struct Zone {
    pub zone_id: i32,
    pub kind: ZoneKind,
    /// Planimetric area, m^2.
    pub area: f64,
    pub volume: Volume,
    pub centroid: [f64; 2],
    /// Highest pre-event elevation in the zone, m.
    pub z_max: f64,
    /// Lowest post-event elevation in the zone, m.
    pub z_min: f64,
    /// Row-major indices of the zone's cells.
    #[serde(skip)]
    pub cells: Vec<usize>,
    /// Outline: polygons of rings (exterior counter-clockwise first, then holes), world
    /// coordinates.
    #[serde(skip)]
    pub polygons: Vec<Vec<Vec<[f64; 2]>>>,
}

/// Volume and error of the change of sign `sign` (-1 loss, +1 gain) over `cells`:
/// `V = sum sign dz_i A`. A cell without dz (a survey left it empty) takes the mean dz of
/// its finite 8-neighbours, with the variance of those values plus their mean random
/// variance as its random error (no finite neighbour: the cell is left out).
///
/// Errors (1 sigma), with `sigma_v^2` the summed survey accuracies and `G_s = sum grad z_s`
/// the summed slope of survey `s` (a horizontal shift `d_s` of survey `s` moves the
/// volume by `-+A G_s . d_s`):
/// * split: `sqrt(sum A^2 r_i + (N A)^2 sigma_v^2 + sum_s sigma_h,s^2 A^2 |G_s|^2)`;
/// * independent: `sqrt(sum A^2 (sigma_i^2 + sum_s sigma_h,s^2 |grad z_s,i|^2))`;
/// * correlated: `sum A (sigma_i + sum_s sigma_h,s |grad z_s,i|)`.
pub fn volume_of(
    dod: &Dod,
    cells: impl IntoIterator<Item = usize>,
    sign: f64,
    mode: VolumeError,
) -> Volume {
    let a = dod.grid.cell_area();
    let sh = dod.horizontal_var.map(f64::sqrt);
    let (mut v, mut rand2, mut lin, mut all2) = (0.0, 0.0, 0.0, 0.0);
    let (mut n, mut filled) = (0usize, 0usize);
    let mut gsum = [[0.0f64; 2]; 2];
    for i in cells {
        let cell = if dod.dz[i].is_finite() {
            CellChange {
                dz: dod.dz[i],
                random_var: dod.random_var[i],
                grad: [dod.pre.grad[i], dod.post.grad[i]],
            }
        } else if let Some(c) = fill(dod, i) {
            filled += 1;
            c
        } else {
            continue;
        };
        let err2 = cell.random_var + dod.systematic_var;
        let gnorm = cell.grad.map(|g| g[0].hypot(g[1]));
        v += sign * cell.dz * a;
        rand2 += a * a * cell.random_var;
        lin += a * (err2.sqrt() + sh[0] * gnorm[0] + sh[1] * gnorm[1]);
        all2 += a
            * a
            * (err2
                + dod.horizontal_var[0] * gnorm[0].powi(2)
                + dod.horizontal_var[1] * gnorm[1].powi(2));
        for (acc, g) in gsum.iter_mut().zip(cell.grad) {
            acc[0] += g[0];
            acc[1] += g[1];
        }
        n += 1;
    }
    let error = match mode {
        VolumeError::Split => {
            let horizontal: f64 = (0..2)
                .map(|s| dod.horizontal_var[s] * (a * gsum[s][0].hypot(gsum[s][1])).powi(2))
                .sum();
            (rand2 + (n as f64 * a).powi(2) * dod.systematic_var + horizontal).sqrt()
        }
        VolumeError::Independent => all2.sqrt(),
        VolumeError::Correlated => lin,
    };
    Volume { volume: v, error, cells: n, filled }
}

/// dz, random variance and slopes of one cell (measured or filled).
struct CellChange {
    dz: f64,
    random_var: f64,
    grad: [[f64; 2]; 2],
}

/// A missing cell filled from its finite 8-neighbours.
fn fill(dod: &Dod, i: usize) -> Option<CellChange> {
    let g = &dod.grid;
    let (r, c) = ((i / g.nx) as i64, (i % g.nx) as i64);
    let (mut k, mut s, mut ss, mut rv) = (0usize, 0.0, 0.0, 0.0);
    let mut grad = [[0.0f64; 2]; 2];
    for dr in -1..=1i64 {
        for dc in -1..=1i64 {
            let (rr, cc) = (r + dr, c + dc);
            if (dr, dc) == (0, 0) || rr < 0 || cc < 0 || rr >= g.ny as i64 || cc >= g.nx as i64 {
                continue;
            }
            let j = (rr as usize) * g.nx + cc as usize;
            if !dod.dz[j].is_finite() {
                continue;
            }
            k += 1;
            s += dod.dz[j];
            ss += dod.dz[j] * dod.dz[j];
            rv += dod.random_var[j];
            for (acc, sg) in grad.iter_mut().zip([dod.pre.grad[j], dod.post.grad[j]]) {
                acc[0] += sg[0];
                acc[1] += sg[1];
            }
        }
    }
    if k == 0 {
        return None;
    }
    let kf = k as f64;
    let mean = s / kf;
    let spread = if k > 1 { ((ss - s * mean) / (kf - 1.0)).max(0.0) } else { 0.0 };
    Some(CellChange {
        dz: mean,
        random_var: spread + rv / kf,
        grad: grad.map(|g| [g[0] / kf, g[1] / kf]),
    })
}

/// The cells a zone's volume sums: the zone, the cells it encloses (not reachable from
/// outside without crossing it, moving with the connectivity complementary to the
/// zone's), and `margin` rings of cells around them (8-neighbours), less the cells of
/// `exclude`. Row-major order.
pub fn footprint(
    grid: &Grid,
    cells: &[usize],
    connectivity: Connectivity,
    margin: u32,
    exclude: &[bool],
) -> Vec<usize> {
    if cells.is_empty() {
        return Vec::new();
    }
    let (r0, r1, c0, c1) = cell_bounds(grid, cells);
    // Local frame: the bounding box with a border of margin + 1 cells (may leave the grid).
    let m = margin as i64 + 1;
    let (fr0, fc0) = (r0 as i64 - m, c0 as i64 - m);
    let (w, h) = ((c1 - c0) as i64 + 1 + 2 * m, (r1 - r0) as i64 + 1 + 2 * m);
    let local = |r: i64, c: i64| (r * w + c) as usize;
    let mut zone = vec![false; (w * h) as usize];
    for &i in cells {
        zone[local((i / grid.nx) as i64 - fr0, (i % grid.nx) as i64 - fc0)] = true;
    }
    // Flood the outside from the frame's corner (outside the zone by construction).
    let n4: &[(i64, i64)] = &[(1, 0), (-1, 0), (0, 1), (0, -1)];
    let n8: &[(i64, i64)] = &[(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)];
    let moves = if connectivity == Connectivity::Eight { n4 } else { n8 };
    let mut outside = vec![false; zone.len()];
    let mut stack = vec![(0i64, 0i64)];
    outside[0] = true;
    while let Some((r, c)) = stack.pop() {
        for (dr, dc) in moves {
            let (rr, cc) = (r + dr, c + dc);
            if rr < 0 || cc < 0 || rr >= h || cc >= w {
                continue;
            }
            let j = local(rr, cc);
            if !zone[j] && !outside[j] {
                outside[j] = true;
                stack.push((rr, cc));
            }
        }
    }
    let mut inside: Vec<bool> = outside.iter().map(|o| !o).collect();
    for _ in 0..margin {
        let prev = inside.clone();
        for r in 0..h {
            for c in 0..w {
                if prev[local(r, c)] {
                    continue;
                }
                let near = n8.iter().any(|(dr, dc)| {
                    let (rr, cc) = (r + dr, c + dc);
                    rr >= 0 && cc >= 0 && rr < h && cc < w && prev[local(rr, cc)]
                });
                inside[local(r, c)] = near;
            }
        }
    }
    let mut out = Vec::new();
    for r in 0..h {
        for c in 0..w {
            let (gr, gc) = (r + fr0, c + fc0);
            if !inside[local(r, c)]
                || gr < 0
                || gc < 0
                || gr >= grid.ny as i64
                || gc >= grid.nx as i64
            {
                continue;
            }
            let i = gr as usize * grid.nx + gc as usize;
            if !exclude[i] {
                out.push(i);
            }
        }
    }
    out
}

/// Connected components of the cells where `mask` is true, in row-major order of their
/// first cell; each component lists its cells in row-major order.
pub fn components(grid: &Grid, mask: &[bool], connectivity: Connectivity) -> Vec<Vec<usize>> {
    let (nx, ny) = (grid.nx as i64, grid.ny as i64);
    let mut seen = vec![false; mask.len()];
    let mut out = Vec::new();
    let n4: &[(i64, i64)] = &[(1, 0), (-1, 0), (0, 1), (0, -1)];
    let n8: &[(i64, i64)] = &[(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)];
    let nb = if connectivity == Connectivity::Four { n4 } else { n8 };
    for s in 0..mask.len() {
        if !mask[s] || seen[s] {
            continue;
        }
        seen[s] = true;
        let mut stack = vec![s];
        let mut comp = Vec::new();
        while let Some(i) = stack.pop() {
            comp.push(i);
            let (r, c) = ((i as i64) / nx, (i as i64) % nx);
            for (dc, dr) in nb {
                let (rr, cc) = (r + dr, c + dc);
                if rr < 0 || cc < 0 || rr >= ny || cc >= nx {
                    continue;
                }
                let j = (rr * nx + cc) as usize;
                if mask[j] && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        comp.sort_unstable();
        out.push(comp);
    }
    out
}

/// Find the zones of a DoD.
pub fn find_zones(dod: &Dod, cfg: &ZonesConfig, volume_error: VolumeError) -> Vec<Zone> {
    let g = &dod.grid;
    let area = g.cell_area();
    let mut zones = Vec::new();
    let loss: Vec<bool> = (0..g.len()).map(|i| dod.significant[i] && dod.dz[i] < 0.0).collect();
    let gain: Vec<bool> = (0..g.len()).map(|i| dod.significant[i] && dod.dz[i] > 0.0).collect();
    for kind in [ZoneKind::Scar, ZoneKind::Deposit] {
        let (mask, other) = if kind == ZoneKind::Scar { (&loss, &gain) } else { (&gain, &loss) };
        let mut comps: Vec<Vec<usize>> = components(g, mask, cfg.connectivity)
            .into_iter()
            .filter(|c| c.len() as f64 * area >= cfg.min_area)
            .collect();
        // Largest first; ties keep row-major order of discovery (stable sort).
        comps.sort_by_key(|c| std::cmp::Reverse(c.len()));
        if !cfg.keep_all {
            comps.truncate(1);
        }
        for cells in comps {
            let sum = footprint(g, &cells, cfg.connectivity, cfg.volume_margin, other);
            zones.push(make_zone(dod, kind, cells, &sum, volume_error));
        }
    }
    // Ids: scars first (largest first), then deposits; so the main scar is 0 and the main
    // deposit follows the scars.
    for (k, z) in zones.iter_mut().enumerate() {
        z.zone_id = k as i32;
    }
    zones
}

fn make_zone(
    dod: &Dod,
    kind: ZoneKind,
    cells: Vec<usize>,
    footprint: &[usize],
    mode: VolumeError,
) -> Zone {
    let g = &dod.grid;
    let sign = if kind == ZoneKind::Scar { -1.0 } else { 1.0 };
    let volume = volume_of(dod, footprint.iter().copied(), sign, mode);
    let (mut sx, mut sy) = (0.0, 0.0);
    let (mut z_max, mut z_min) = (f64::NEG_INFINITY, f64::INFINITY);
    for &i in &cells {
        let (x, y) = g.centre(i);
        sx += x;
        sy += y;
        z_max = z_max.max(dod.pre.z[i]);
        z_min = z_min.min(dod.post.z[i]);
    }
    let n = cells.len() as f64;
    let polygons = outline(g, &cells);
    Zone {
        zone_id: -1,
        kind,
        area: n * g.cell_area(),
        volume,
        centroid: [sx / n, sy / n],
        z_max,
        z_min,
        cells,
        polygons,
    }
}

/// Row and column bounds (r0, r1, c0, c1), inclusive, of a non-empty set of cells.
fn cell_bounds(grid: &Grid, cells: &[usize]) -> (usize, usize, usize, usize) {
    let (mut r0, mut r1, mut c0, mut c1) = (usize::MAX, 0, usize::MAX, 0);
    for &i in cells {
        let (r, c) = (i / grid.nx, i % grid.nx);
        r0 = r0.min(r);
        r1 = r1.max(r);
        c0 = c0.min(c);
        c1 = c1.max(c);
    }
    (r0, r1, c0, c1)
}

/// Outline of a set of cells as polygons (rings in world coordinates; exterior rings
/// counter-clockwise, holes clockwise, each ring closed).
pub fn outline(grid: &Grid, cells: &[usize]) -> Vec<Vec<Vec<[f64; 2]>>> {
    if cells.is_empty() {
        return Vec::new();
    }
    // Local frame: the cells' bounding box with a one-cell margin.
    let (r0, r1, c0, c1) = cell_bounds(grid, cells);
    let w = c1 - c0 + 3; // cells per local row, with margins
    let h = r1 - r0 + 3;
    let mut inside = vec![false; w * h];
    for &i in cells {
        let (r, c) = (i / grid.nx - r0 + 1, i % grid.nx - c0 + 1);
        inside[r * w + c] = true;
    }
    let is_in = |c: usize, r: usize| inside[r * w + c];
    // Vertices (c, r) with 0 <= c <= w, 0 <= r <= h; vertex id = r * (w + 1) + c.
    let vid = |c: usize, r: usize| r * (w + 1) + c;
    // Directed boundary edges with the set on the left: (from, to, direction).
    // Directions: 0 = east, 1 = north, 2 = west, 3 = south.
    let mut edges: Vec<(usize, usize, u8)> = Vec::new();
    for r in 1..h - 1 {
        for c in 1..w - 1 {
            if !is_in(c, r) {
                continue;
            }
            if !is_in(c, r - 1) {
                edges.push((vid(c, r), vid(c + 1, r), 0));
            }
            if !is_in(c + 1, r) {
                edges.push((vid(c + 1, r), vid(c + 1, r + 1), 1));
            }
            if !is_in(c, r + 1) {
                edges.push((vid(c + 1, r + 1), vid(c, r + 1), 2));
            }
            if !is_in(c - 1, r) {
                edges.push((vid(c, r + 1), vid(c, r), 3));
            }
        }
    }
    // Outgoing edges per vertex (at most two).
    let nv = (w + 1) * (h + 1);
    let mut out_edges: Vec<[u32; 2]> = vec![[u32::MAX; 2]; nv];
    for (k, e) in edges.iter().enumerate() {
        let slot = &mut out_edges[e.0];
        if slot[0] == u32::MAX {
            slot[0] = k as u32;
        } else {
            slot[1] = k as u32;
        }
    }
    let mut used = vec![false; edges.len()];
    let mut loops: Vec<Vec<usize>> = Vec::new();
    for start in 0..edges.len() {
        if used[start] {
            continue;
        }
        let mut verts = Vec::new();
        let mut k = start;
        loop {
            used[k] = true;
            let (from, to, dir) = edges[k];
            verts.push(from);
            let cand = out_edges[to];
            let free: Vec<u32> =
                cand.iter().copied().filter(|&e| e != u32::MAX && !used[e as usize]).collect();
            let next = match free.len() {
                0 => break, // back at the start
                1 => free[0] as usize,
                _ => {
                    // Diagonal vertex: turn left (keep hugging the current cell).
                    let left = (dir + 1) % 4;
                    free.iter().copied().find(|&e| edges[e as usize].2 == left).unwrap_or(free[0])
                        as usize
                }
            };
            k = next;
        }
        loops.extend(split_loop(verts));
    }
    // World coordinates, straight runs collapsed, orientation classified.
    let to_world = |v: usize| {
        let (r, c) = (v / (w + 1), v % (w + 1));
        [
            grid.x0 + (c0 as f64 + c as f64 - 1.0) * grid.cell,
            grid.y0 + (r0 as f64 + r as f64 - 1.0) * grid.cell,
        ]
    };
    let mut exteriors: Vec<(Vec<[f64; 2]>, f64)> = Vec::new();
    let mut holes: Vec<Vec<[f64; 2]>> = Vec::new();
    for l in loops {
        let ring = simplify(&l.iter().map(|&v| to_world(v)).collect::<Vec<_>>());
        if ring.len() < 3 {
            continue;
        }
        let a = signed_area(&ring);
        if a > 0.0 {
            exteriors.push((ring, a));
        } else {
            holes.push(ring);
        }
    }
    let mut polys: Vec<Vec<Vec<[f64; 2]>>> =
        exteriors.iter().map(|(r, _)| vec![close(r)]).collect();
    for hole in holes {
        // A point just inside the hole: a quarter cell to the right of its first edge.
        let (p, q) = (hole[0], hole[1]);
        let len = ((q[0] - p[0]).powi(2) + (q[1] - p[1]).powi(2)).sqrt();
        let (dx, dy) = ((q[0] - p[0]) / len, (q[1] - p[1]) / len);
        let t = [
            0.5 * (p[0] + q[0]) + 0.25 * grid.cell * dy,
            0.5 * (p[1] + q[1]) - 0.25 * grid.cell * dx,
        ];
        let owner = exteriors
            .iter()
            .enumerate()
            .filter(|(_, (r, _))| point_in_ring(t, r))
            .min_by(|a, b| a.1.1.total_cmp(&b.1.1))
            .map(|(k, _)| k);
        if let Some(k) = owner {
            polys[k].push(close(&hole));
        }
    }
    polys
}

/// Split a closed vertex loop wherever it visits a vertex twice, into simple loops.
fn split_loop(verts: Vec<usize>) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    for v in verts {
        if let Some(pos) = stack.iter().rposition(|&u| u == v) {
            let sub: Vec<usize> = stack.drain(pos..).collect();
            out.push(sub);
        }
        stack.push(v);
    }
    if !stack.is_empty() {
        out.push(stack);
    }
    out
}

/// Drop vertices in the middle of straight runs (ring given open, returned open).
fn simplify(ring: &[[f64; 2]]) -> Vec<[f64; 2]> {
    let n = ring.len();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (a, b, c) = (ring[(i + n - 1) % n], ring[i], ring[(i + 1) % n]);
        let cross = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]);
        if cross != 0.0 {
            out.push(b);
        }
    }
    // Start at the lowest-then-leftmost vertex so the output does not depend on tracing order.
    if let Some(k) = (0..out.len())
        .min_by(|&i, &j| out[i][1].total_cmp(&out[j][1]).then(out[i][0].total_cmp(&out[j][0])))
    {
        out.rotate_left(k);
    }
    out
}

fn close(r: &[[f64; 2]]) -> Vec<[f64; 2]> {
    let mut v = r.to_vec();
    v.push(r[0]);
    v
}

/// Shoelace signed area of an open ring (positive when counter-clockwise).
pub fn signed_area(r: &[[f64; 2]]) -> f64 {
    let n = r.len();
    (0..n).map(|i| r[i][0] * r[(i + 1) % n][1] - r[(i + 1) % n][0] * r[i][1]).sum::<f64>() * 0.5
}

/// Even-odd point-in-ring test (ring open or closed).
pub fn point_in_ring(p: [f64; 2], r: &[[f64; 2]]) -> bool {
    let n = r.len();
    let mut inside = false;
    let mut j = n - 1;
    for i in 0..n {
        let (a, b) = (r[i], r[j]);
        if (a[1] > p[1]) != (b[1] > p[1])
            && p[0] < (b[0] - a[0]) * (p[1] - a[1]) / (b[1] - a[1]) + a[0]
        {
            inside = !inside;
        }
        j = i;
    }
    inside
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(nx: usize, ny: usize) -> Grid {
        Grid { x0: 100.0, y0: 200.0, cell: 2.0, nx, ny }
    }

    fn cells_of(g: &Grid, pattern: &[&str]) -> Vec<usize> {
        // pattern rows are given north first
        let mut v = Vec::new();
        for (k, line) in pattern.iter().enumerate() {
            let r = pattern.len() - 1 - k;
            for (c, ch) in line.chars().enumerate() {
                if ch == '#' {
                    v.push(r * g.nx + c);
                }
            }
        }
        v.sort_unstable();
        v
    }

    fn area(polys: &[Vec<Vec<[f64; 2]>>]) -> f64 {
        polys.iter().map(|p| p.iter().map(|r| signed_area(&r[..r.len() - 1])).sum::<f64>()).sum()
    }

    #[test]
    fn square_block_is_one_rectangle() {
        let g = grid(5, 5);
        let c = cells_of(&g, &[".....", ".###.", ".###.", ".....", "....."]);
        let p = outline(&g, &c);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].len(), 1);
        assert_eq!(p[0][0].len(), 5); // 4 corners + closing vertex
        assert_eq!(area(&p), 6.0 * 4.0);
        assert_eq!(p[0][0][0], [102.0, 204.0]);
    }

    #[test]
    fn ring_of_cells_has_a_hole() {
        let g = grid(5, 5);
        let c = cells_of(&g, &["#####", "#...#", "#...#", "#####", "....."]);
        let p = outline(&g, &c);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].len(), 2);
        assert!(signed_area(&p[0][1]) < 0.0);
        assert_eq!(area(&p), 14.0 * 4.0);
    }

    #[test]
    fn diagonal_cells_become_two_polygons() {
        let g = grid(3, 3);
        let c = cells_of(&g, &["...", ".#.", "#.."]);
        let p = outline(&g, &c);
        assert_eq!(p.len(), 2);
        assert_eq!(area(&p), 8.0);
        // 8-connected they are one component, 4-connected two
        let mut mask = vec![false; 9];
        for &i in &c {
            mask[i] = true;
        }
        assert_eq!(components(&g, &mask, Connectivity::Eight).len(), 1);
        assert_eq!(components(&g, &mask, Connectivity::Four).len(), 2);
    }

    #[test]
    fn hole_touching_the_shell_at_a_corner_is_split_out() {
        // A U closed by a diagonal link: the enclosed empty cell touches the outside
        // at one vertex only.
        let g = grid(4, 4);
        let c = cells_of(&g, &["###.", "#.#.", "##..", "...."]);
        // cells: the empty (1,2) cell is enclosed except at its south-east corner
        let p = outline(&g, &c);
        let rings: usize = p.iter().map(|q| q.len()).sum();
        assert!(rings >= 2, "{p:?}");
        assert_eq!(area(&p), 7.0 * 4.0);
        // every ring is simple: no repeated vertex except the closing one
        for q in &p {
            for r in q {
                let mut v: Vec<_> =
                    r[..r.len() - 1].iter().map(|p| (p[0] as i64, p[1] as i64)).collect();
                v.sort_unstable();
                let n = v.len();
                v.dedup();
                assert_eq!(v.len(), n, "{r:?}");
            }
        }
    }

    #[test]
    fn footprint_adds_holes_and_margin_but_not_excluded_cells() {
        let g = grid(9, 9);
        let zone = cells_of(
            &g,
            &[
                ".........",
                ".........",
                "..#####..",
                "..#...#..",
                "..#.#.#..",
                "..#####..",
                ".........",
                ".........",
                ".........",
            ],
        );
        let none = vec![false; g.len()];
        // No margin: the zone and the 5 enclosed cells (the centre one is zone already).
        let f0 = footprint(&g, &zone, Connectivity::Eight, 0, &none);
        let block = cells_of(
            &g,
            &[
                ".........",
                ".........",
                "..#####..",
                "..#####..",
                "..#####..",
                "..#####..",
                ".........",
                ".........",
                ".........",
            ],
        );
        assert_eq!(f0, block);
        // One ring: the 7 x 6 block; one excluded cell of the ring drops out.
        let mut ex = none.clone();
        ex[7 * 9 + 1] = true; // row 7, col 1
        let f1 = footprint(&g, &zone, Connectivity::Eight, 1, &ex);
        assert_eq!(f1.len(), 7 * 6 - 1);
        assert!(!f1.contains(&(7 * 9 + 1)));
        // A cell walled in on its four sides is a hole of an 8-connected zone; the outside of
        // a 4-connected zone reaches it diagonally.
        let open = cells_of(&g, &["...", ".#.", "#.#", ".#."]);
        assert_eq!(footprint(&g, &open, Connectivity::Eight, 0, &none).len(), 5);
        assert_eq!(footprint(&g, &open, Connectivity::Four, 0, &none).len(), 4);
    }

    /// A tilted plane lowered by 1 m, one cell of the post survey empty: the volume over a
    /// block is exact, the empty cell is filled, and the split error is the closed form.
    #[test]
    fn volume_of_tilted_block_with_an_empty_cell() {
        use crate::config::DodConfig;
        let g = Grid { x0: 0.0, y0: 0.0, cell: 1.0, nx: 6, ny: 5 };
        let cfg = DodConfig {
            pre_horizontal_accuracy: 0.2,
            post_horizontal_accuracy: 0.1,
            ..DodConfig::default()
        };
        // Two points per cell at its centre (no spread), z = 0.5 x + 0.25 y.
        let empty = 2 * 6 + 2;
        let (mut pre, mut post) = (Vec::new(), Vec::new());
        for i in 0..g.len() {
            let (x, y) = g.centre(i);
            let z = 0.5 * x + 0.25 * y;
            pre.extend([[x, y, z]; 2]);
            if i != empty {
                post.extend([[x, y, z - 1.0]; 2]);
            }
        }
        let dod = crate::dod::difference(g, &pre, &post, &cfg);
        assert!(dod.dz[empty].is_nan());
        let block: Vec<usize> = (0..g.len())
            .filter(|i| (1..=3).contains(&(i % 6)) && (1..=3).contains(&(i / 6)))
            .collect();
        let v = volume_of(&dod, block.iter().copied(), -1.0, VolumeError::Split);
        assert_eq!((v.cells, v.filled), (9, 1));
        assert!((v.volume - 9.0).abs() < 1e-12, "{v:?}");
        // Gradients of a plane are exact (central or one-sided), so G_s = 9 (0.5, 0.25);
        // no spread, so the random part is 0.
        let gs = 9.0 * 0.5f64.hypot(0.25);
        let expect =
            (81.0 * dod.systematic_var + (0.2f64.powi(2) + 0.1f64.powi(2)) * gs * gs).sqrt();
        assert!((v.error - expect).abs() < 1e-9, "{} vs {expect}", v.error);
        // Independent: sqrt(sum sigma_v^2 + sigma_h^2 |g|^2) per cell.
        let vi = volume_of(&dod, block.iter().copied(), -1.0, VolumeError::Independent);
        let per = dod.systematic_var + 0.05 * 0.5f64.hypot(0.25).powi(2);
        assert!((vi.error - (9.0 * per).sqrt()).abs() < 1e-9);
    }
}
