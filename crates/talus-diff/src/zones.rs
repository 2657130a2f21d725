//! Change zones and volumes.
//!
//! Significant loss cells (dz < -LoD) and significant gain cells (dz > LoD) are grouped
//! into connected regions (4- or 8-connectivity). The largest loss region is the
//! collapse `scar`, the largest gain region the `deposit`. A zone's outline is traced
//! along the cell edges: every boundary edge is oriented with the zone on its left, the
//! edges are chained into loops (turning left at a vertex shared by two diagonal cells),
//! loops are split where they touch themselves, and counter-clockwise loops become
//! exterior rings, clockwise ones holes (assigned to the smallest exterior containing
//! them). Volumes are `sum |dz| A` over the zone's cells, with the error combined as
//! configured ([`crate::config::VolumeError`]).

use crate::config::{Connectivity, VolumeError, ZonesConfig};
use crate::dod::{Dod, Grid};
use serde::Serialize;

/// Kind of change zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneKind {
    /// Significant loss.
    Scar,
    /// Significant gain.
    Deposit,
}

impl ZoneKind {
    /// The name written in the `kind` column.
    pub fn name(self) -> &'static str {
        match self {
            ZoneKind::Scar => "scar",
            ZoneKind::Deposit => "deposit",
        }
    }
}

/// A volume with its 1-sigma error.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Volume {
    /// Volume, m^3 (positive for loss and gain alike).
    pub volume: f64,
    /// 1-sigma error, m^3.
    pub error: f64,
    /// Cells counted.
    pub cells: usize,
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

/// Volume and error of a set of cells.
pub fn volume_of(dod: &Dod, cells: impl IntoIterator<Item = usize>, mode: VolumeError) -> Volume {
    let a = dod.grid.cell_area();
    let (mut v, mut rand2, mut lin, mut all2, mut n) = (0.0, 0.0, 0.0, 0.0, 0usize);
    for i in cells {
        v += dod.dz[i].abs() * a;
        rand2 += (a * a) * dod.random_var[i];
        lin += a * dod.dz_error[i];
        all2 += (a * dod.dz_error[i]).powi(2);
        n += 1;
    }
    let error = match mode {
        VolumeError::Split => (rand2 + (n as f64 * a).powi(2) * dod.systematic_var).sqrt(),
        VolumeError::Independent => all2.sqrt(),
        VolumeError::Correlated => lin,
    };
    Volume { volume: v, error, cells: n }
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
    for kind in [ZoneKind::Scar, ZoneKind::Deposit] {
        let mask: Vec<bool> = (0..g.len())
            .map(|i| {
                dod.significant[i]
                    && if kind == ZoneKind::Scar { dod.dz[i] < 0.0 } else { dod.dz[i] > 0.0 }
            })
            .collect();
        let mut comps: Vec<Vec<usize>> = components(g, &mask, cfg.connectivity)
            .into_iter()
            .filter(|c| c.len() as f64 * area >= cfg.min_area)
            .collect();
        // Largest first; ties keep row-major order of discovery (stable sort).
        comps.sort_by_key(|c| std::cmp::Reverse(c.len()));
        if !cfg.keep_all {
            comps.truncate(1);
        }
        for cells in comps {
            zones.push(make_zone(dod, kind, cells, volume_error));
        }
    }
    // Ids: scars first (largest first), then deposits; so the main scar is 0 and the main
    // deposit follows the scars.
    for (k, z) in zones.iter_mut().enumerate() {
        z.zone_id = k as i32;
    }
    zones
}

fn make_zone(dod: &Dod, kind: ZoneKind, cells: Vec<usize>, mode: VolumeError) -> Zone {
    let g = &dod.grid;
    let volume = volume_of(dod, cells.iter().copied(), mode);
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

/// Outline of a set of cells as polygons (rings in world coordinates; exterior rings
/// counter-clockwise, holes clockwise, each ring closed).
pub fn outline(grid: &Grid, cells: &[usize]) -> Vec<Vec<Vec<[f64; 2]>>> {
    if cells.is_empty() {
        return Vec::new();
    }
    // Local frame: the cells' bounding box with a one-cell margin.
    let (mut r0, mut r1, mut c0, mut c1) = (usize::MAX, 0, usize::MAX, 0);
    for &i in cells {
        let (r, c) = (i / grid.nx, i % grid.nx);
        r0 = r0.min(r);
        r1 = r1.max(r);
        c0 = c0.min(c);
        c1 = c1.max(c);
    }
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
}
