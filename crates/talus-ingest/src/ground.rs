//! Ground classification by the Simple Morphological Filter (SMRF, Pingel, Clarke &
//! McBride 2013, ISPRS J. 77:21-30; PDAL's `filters.smrf`).
//!
//! On a grid of square cells of side c anchored at the CRS origin (cell (⌊x/c⌋, ⌊y/c⌋)):
//! 1. **Minimum surface** Z_min: the lowest elevation of the considered points of each
//!    cell ([`MinGrid`], built by a first pass over the data; its memory grows with the
//!    occupied cells, at most area / c², never with the point count).
//! 2. **Inpainting** of the empty cells ([`inpaint`]): D'Errico's spring metaphor, as in
//!    the paper: every cell is tied to its 8 neighbours by springs (stiffness 1 along the
//!    axes, ½ along the diagonals) and the unknown cells take the rest state, i.e. each is
//!    the weighted mean of its neighbours (a discrete Laplace equation, solved by
//!    successive over-relaxation). A plane is reproduced exactly.
//! 3. **Low outliers**: the progressive filter below on -Z_min with slope 5 and a window
//!    of 1 m (as the paper and PDAL do) flags pits.
//! 4. **Progressive opening** ([`progressive_filter`]): for window radii r = 1, 2, ...,
//!    ⌈w/c⌉ cells, the surface of the previous step Z_{r-1} (Z_0 = Z_min) is opened
//!    (erosion then dilation, [`open`]) with a disk of radius r cells; a cell is an object
//!    if Z_{r-1} - Z_r > s · r · c (s the slope tolerance). A plane of any slope and any
//!    surface that is monotone across a window is unchanged by an opening: only bumps
//!    narrower than the window are lowered.
//! 5. **Provisional DEM** Z_pro: Z_min with the empty, object and low cells removed, then
//!    inpainted (step 2); its slope |∇Z_pro| by central differences.
//! 6. **Points**: with Z_pro and |∇Z_pro| interpolated bilinearly between cell centres at
//!    the point (the paper uses a spline, PDAL the cell's value), a point is ground if
//!    |z - Z_pro| ≤ t + k · |∇Z_pro| (t the elevation threshold, k the scalar).
//!
//! Everything is deterministic: the minimum of a cell does not depend on the order of the
//! points, the grid is dense and scanned in row order, and the parallel morphology writes
//! each output row from the input alone.

use crate::Error;
use crate::config::{GroundApplyTo, GroundReturns, Smrf};
use crate::convert::Coords;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;

/// Largest grid the filter builds (cells); a larger one is refused with a typed error.
pub const MAX_CELLS: u64 = 400_000_000;

/// First pass: the lowest elevation of each occupied cell.
#[derive(Debug)]
pub struct MinGrid {
    cell: f64,
    cells: HashMap<(i64, i64), f64>,
}

impl MinGrid {
    pub fn new(cell: f64) -> Self {
        MinGrid { cell, cells: HashMap::new() }
    }

    /// Offer a point to the grid.
    #[inline]
    pub fn offer(&mut self, x: f64, y: f64, z: f64) {
        let key = ((x / self.cell).floor() as i64, (y / self.cell).floor() as i64);
        self.cells.entry(key).and_modify(|m| *m = m.min(z)).or_insert(z);
    }

    /// The dense raster of the occupied cells' bounding box (NaN in empty cells).
    pub fn into_raster(self) -> Result<Raster, Error> {
        if self.cells.is_empty() {
            return Err(Error::Ground("no point to build the ground surface from".into()));
        }
        let (mut i0, mut j0, mut i1, mut j1) = (i64::MAX, i64::MAX, i64::MIN, i64::MIN);
        for &(i, j) in self.cells.keys() {
            i0 = i0.min(i);
            j0 = j0.min(j);
            i1 = i1.max(i);
            j1 = j1.max(j);
        }
        let (nx, ny) = ((i1 - i0 + 1) as u64, (j1 - j0 + 1) as u64);
        if nx.saturating_mul(ny) > MAX_CELLS {
            return Err(Error::Ground(format!(
                "the points span {nx} x {ny} cells of {} m, more than {MAX_CELLS}: raise ground.cell or crop with bbox",
                self.cell
            )));
        }
        let (nx, ny) = (nx as usize, ny as usize);
        let mut z = vec![f64::NAN; nx * ny];
        for (&(i, j), &v) in &self.cells {
            z[(j - j0) as usize * nx + (i - i0) as usize] = v;
        }
        Ok(Raster { cell: self.cell, i0, j0, nx, ny, z })
    }
}

/// A dense grid of cell values, row-major (index j · nx + i), cell (i, j) covering
/// [(i0 + i) c, (i0 + i + 1) c) × [(j0 + j) c, (j0 + j + 1) c).
#[derive(Debug, Clone, PartialEq)]
pub struct Raster {
    pub cell: f64,
    pub i0: i64,
    pub j0: i64,
    pub nx: usize,
    pub ny: usize,
    pub z: Vec<f64>,
}

impl Raster {
    /// Bilinear interpolation between cell centres (clamped at the border).
    pub fn sample(values: &[f64], r: &Raster, x: f64, y: f64) -> f64 {
        let fx = (x / r.cell - r.i0 as f64 - 0.5).clamp(0.0, (r.nx - 1) as f64);
        let fy = (y / r.cell - r.j0 as f64 - 0.5).clamp(0.0, (r.ny - 1) as f64);
        let (ia, ja) = (fx.floor() as usize, fy.floor() as usize);
        let (ib, jb) = ((ia + 1).min(r.nx - 1), (ja + 1).min(r.ny - 1));
        let (tx, ty) = (fx - ia as f64, fy - ja as f64);
        let v = |i: usize, j: usize| values[j * r.nx + i];
        let lo = v(ia, ja) + tx * (v(ib, ja) - v(ia, ja));
        let hi = v(ia, jb) + tx * (v(ib, jb) - v(ia, jb));
        lo + ty * (hi - lo)
    }
}

/// Fill the NaN cells of `z` (nx × ny, row-major) with the spring-metaphor rest state.
/// Returns the number of cells filled. Does nothing if every cell is NaN.
pub fn inpaint(z: &mut [f64], nx: usize, ny: usize) -> usize {
    let holes: Vec<usize> = (0..z.len()).filter(|&k| z[k].is_nan()).collect();
    if holes.is_empty() || holes.len() == z.len() {
        return 0;
    }
    const NB: [(isize, isize, f64); 8] = [
        (-1, 0, 1.0),
        (1, 0, 1.0),
        (0, -1, 1.0),
        (0, 1, 1.0),
        (-1, -1, 0.5),
        (1, -1, 0.5),
        (-1, 1, 0.5),
        (1, 1, 0.5),
    ];
    let neighbours = |k: usize| {
        let (i, j) = ((k % nx) as isize, (k / nx) as isize);
        NB.iter().filter_map(move |&(di, dj, w)| {
            let (a, b) = (i + di, j + dj);
            (a >= 0 && b >= 0 && (a as usize) < nx && (b as usize) < ny)
                .then(|| (b as usize * nx + a as usize, w))
        })
    };
    // Initial guess: waves inward from the known cells, each cell the mean of its filled
    // neighbours (deterministic: a wave reads only cells filled by earlier waves).
    let mut pending = holes.clone();
    while !pending.is_empty() {
        let mut filled = Vec::new();
        let mut rest = Vec::new();
        for &k in &pending {
            let (mut s, mut w) = (0.0, 0.0);
            for (n, wn) in neighbours(k) {
                if !z[n].is_nan() {
                    s += wn * z[n];
                    w += wn;
                }
            }
            if w > 0.0 { filled.push((k, s / w)) } else { rest.push(k) }
        }
        for (k, v) in filled {
            z[k] = v;
        }
        pending = rest;
    }
    // Successive over-relaxation of the discrete Laplace equation on the holes.
    let scale = z.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1.0);
    let tol = 1e-9 * scale;
    let omega = 1.6;
    for _ in 0..20_000 {
        let mut change = 0.0f64;
        for &k in &holes {
            let (mut s, mut w) = (0.0, 0.0);
            for (n, wn) in neighbours(k) {
                s += wn * z[n];
                w += wn;
            }
            let d = omega * (s / w - z[k]);
            z[k] += d;
            change = change.max(d.abs());
        }
        if change < tol {
            break;
        }
    }
    holes.len()
}

/// 1D running minimum (or maximum) over [i - w, i + w] ∩ [0, n) by van Herk / Gil-Werman
/// (three comparisons per element whatever w).
fn running(src: &[f64], w: usize, max: bool, out: &mut [f64], buf: &mut Vec<f64>) {
    let n = src.len();
    let k = 2 * w + 1;
    let pad = if max { f64::NEG_INFINITY } else { f64::INFINITY };
    let op = |a: f64, b: f64| if max { a.max(b) } else { a.min(b) };
    // padded p[t] = src[t - w]; blocks of k from 0; g prefix, h suffix within a block
    let len = (n + 2 * w).div_ceil(k) * k;
    buf.clear();
    buf.resize(3 * len, pad);
    let (p, gh) = buf.split_at_mut(len);
    let (g, h) = gh.split_at_mut(len);
    p[w..w + n].copy_from_slice(src);
    for b in (0..len).step_by(k) {
        g[b] = p[b];
        for t in b + 1..b + k {
            g[t] = op(g[t - 1], p[t]);
        }
        h[b + k - 1] = p[b + k - 1];
        for t in (b..b + k - 1).rev() {
            h[t] = op(h[t + 1], p[t]);
        }
    }
    for (i, o) in out.iter_mut().enumerate() {
        // window p[i .. i + k)
        *o = op(h[i], g[i + k - 1]);
    }
}

/// Erosion (`max = false`) or dilation of `z` by a flat disk of radius `r` cells
/// (offsets with di² + dj² ≤ r²), cells outside the grid ignored.
pub fn morph(z: &[f64], nx: usize, ny: usize, r: usize, max: bool) -> Vec<f64> {
    let mut out = vec![0.0; z.len()];
    let half: Vec<usize> =
        (0..=r).map(|d| ((r * r - d * d) as f64).sqrt().floor() as usize).collect();
    out.par_chunks_mut(nx).enumerate().for_each_init(
        || (vec![0.0; nx], Vec::new()),
        |(row, buf), (j, o)| {
            o.fill(if max { f64::NEG_INFINITY } else { f64::INFINITY });
            let lo = j.saturating_sub(r);
            let hi = (j + r).min(ny - 1);
            for jj in lo..=hi {
                let w = half[jj.abs_diff(j)];
                running(&z[jj * nx..(jj + 1) * nx], w, max, row, buf);
                for (a, &b) in o.iter_mut().zip(row.iter()) {
                    *a = if max { a.max(b) } else { a.min(b) };
                }
            }
        },
    );
    out
}

/// Morphological opening (erosion then dilation) by a disk of radius `r` cells.
pub fn open(z: &[f64], nx: usize, ny: usize, r: usize) -> Vec<f64> {
    morph(&morph(z, nx, ny, r, false), nx, ny, r, true)
}

/// SMRF's progressive filter: the cells flagged as objects (see the module doc, step 4).
/// `z` must hold no NaN.
pub fn progressive_filter(
    z: &[f64],
    nx: usize,
    ny: usize,
    cell: f64,
    slope: f64,
    window: f64,
) -> Vec<bool> {
    let radii = (window / cell).ceil().max(1.0) as usize;
    let mut flagged = vec![false; z.len()];
    let mut local = z.to_vec();
    for r in 1..=radii {
        let opened = open(&local, nx, ny, r);
        let threshold = slope * r as f64 * cell;
        for ((f, a), b) in flagged.iter_mut().zip(&local).zip(&opened) {
            if a - b > threshold {
                *f = true;
            }
        }
        local = opened;
    }
    flagged
}

/// What the surface construction found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SurfaceStats {
    /// Grid size (cells along x and y).
    pub nx: usize,
    pub ny: usize,
    /// Cells holding at least one considered point.
    pub occupied: usize,
    /// Cells flagged as objects by the progressive opening.
    pub object: usize,
    /// Cells flagged as low outliers.
    pub low: usize,
}

/// The provisional DEM and its slope.
#[derive(Debug, Clone)]
pub struct Surface {
    pub dem: Raster,
    /// |∇DEM| per cell (rise over run).
    pub slope: Vec<f64>,
    pub stats: SurfaceStats,
}

impl Surface {
    /// Steps 2-5 of SMRF on the minimum surface.
    pub fn build(zmin: Raster, p: &Smrf) -> Surface {
        let (nx, ny) = (zmin.nx, zmin.ny);
        let empty: Vec<bool> = zmin.z.iter().map(|v| v.is_nan()).collect();
        let mut filled = zmin.z.clone();
        inpaint(&mut filled, nx, ny);
        let neg: Vec<f64> = filled.iter().map(|v| -v).collect();
        let low = progressive_filter(&neg, nx, ny, zmin.cell, 5.0, 1.0);
        let object = progressive_filter(&filled, nx, ny, zmin.cell, p.slope, p.window);
        let mut pro = zmin.z.clone();
        for k in 0..pro.len() {
            if object[k] || low[k] {
                pro[k] = f64::NAN;
            }
        }
        if pro.iter().all(|v| v.is_nan()) {
            // Everything flagged (a tiny grid): fall back on the minimum surface.
            pro.clone_from(&filled);
        }
        inpaint(&mut pro, nx, ny);
        let slope = gradient(&pro, nx, ny, zmin.cell);
        let stats = SurfaceStats {
            nx,
            ny,
            occupied: empty.iter().filter(|e| !**e).count(),
            object: (0..object.len()).filter(|&k| object[k] && !empty[k]).count(),
            low: (0..low.len()).filter(|&k| low[k] && !empty[k]).count(),
        };
        Surface { dem: Raster { z: pro, ..zmin }, slope, stats }
    }

    /// Ground surface elevation and slope at (x, y).
    pub fn at(&self, x: f64, y: f64) -> (f64, f64) {
        (Raster::sample(&self.dem.z, &self.dem, x, y), Raster::sample(&self.slope, &self.dem, x, y))
    }
}

/// |∇z| by central differences (one-sided at the border), rise over run.
pub fn gradient(z: &[f64], nx: usize, ny: usize, cell: f64) -> Vec<f64> {
    let d = |a: usize, b: usize| (b - a) as f64 * cell;
    let mut out = vec![0.0; z.len()];
    for j in 0..ny {
        for i in 0..nx {
            let (ia, ib) = (i.saturating_sub(1), (i + 1).min(nx - 1));
            let (ja, jb) = (j.saturating_sub(1), (j + 1).min(ny - 1));
            let gx = if nx > 1 { (z[j * nx + ib] - z[j * nx + ia]) / d(ia, ib) } else { 0.0 };
            let gy = if ny > 1 { (z[jb * nx + i] - z[ja * nx + i]) / d(ja, jb) } else { 0.0 };
            out[j * nx + i] = gx.hypot(gy);
        }
    }
    out
}

/// Whether a point enters the ground filter (its returns and, with
/// `apply_to = "unclassified"`, its class).
#[inline]
pub fn considered(p: &Smrf, return_number: u8, number_of_returns: u8, class: u8) -> bool {
    let returns = match p.returns {
        GroundReturns::All => true,
        GroundReturns::LastAndOnly => return_number >= number_of_returns,
    };
    returns && classified_by(p, class)
}

/// Whether the filter sets the class of a point of class `class`.
#[inline]
fn classified_by(p: &Smrf, class: u8) -> bool {
    match p.apply_to {
        GroundApplyTo::All => true,
        GroundApplyTo::Unclassified => class <= 1,
    }
}

/// Points classified by the writing pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct GroundCounts {
    /// Points classified ground (class 2).
    pub ground: u64,
    /// Considered points classified not ground (class 1).
    pub non_ground: u64,
    /// Returns the filter does not consider (not last or only returns), set to class 1.
    pub other_returns: u64,
    /// Points left with their class (`apply_to = "unclassified"` and a class above 1).
    pub kept: u64,
}

/// What the ground filter did, as the ingest summary reports it.
#[derive(Debug, Clone, Serialize)]
pub struct GroundSummary {
    pub method: &'static str,
    /// The parameters used.
    pub parameters: Smrf,
    /// The grid and what the opening flagged.
    pub grid: SurfaceStats,
    /// Points counted inside the bbox (all points without one).
    pub points: GroundCounts,
}

/// The ground surface and the parameters, applied to each chunk of the later passes.
#[derive(Debug, Clone)]
pub struct Classifier {
    pub params: Smrf,
    pub surface: Surface,
}

impl Classifier {
    pub fn new(params: Smrf, grid: MinGrid) -> Result<Classifier, Error> {
        let surface = Surface::build(grid.into_raster()?, &params);
        Ok(Classifier { params, surface })
    }

    /// The class of one point (`None` when it keeps its class).
    #[inline]
    pub fn class_of(&self, x: f64, y: f64, z: f64, rn: u8, nr: u8, class: u8) -> Option<u8> {
        if !classified_by(&self.params, class) {
            return None;
        }
        if !considered(&self.params, rn, nr, class) {
            return Some(1);
        }
        let (dem, slope) = self.surface.at(x, y);
        let limit = self.params.threshold + self.params.scalar * slope;
        Some(if (z - dem).abs() <= limit { 2 } else { 1 })
    }

    /// Replace the classes of a chunk by the computed ones (the original kept in
    /// `coords.original_class`); `counted` selects the points to count.
    pub fn apply(
        &self,
        returns: (&[u8], &[u8]),
        coords: &mut Coords,
        counted: impl Fn(f64, f64, f64) -> bool,
        counts: &mut GroundCounts,
    ) {
        let original = coords.class.clone();
        let (rn, nr) = returns;
        for i in 0..original.len() {
            let (x, y, z) = (coords.x[i], coords.y[i], coords.z[i]);
            let c = self.class_of(x, y, z, rn[i], nr[i], original[i]);
            if let Some(c) = c {
                coords.class[i] = c;
            }
            if counted(x, y, z) {
                match c {
                    None => counts.kept += 1,
                    Some(2) => counts.ground += 1,
                    Some(_) if considered(&self.params, rn[i], nr[i], original[i]) => {
                        counts.non_ground += 1
                    }
                    Some(_) => counts.other_returns += 1,
                }
            }
        }
        coords.original_class = Some(original);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute-force erosion/dilation by the disk of radius r.
    fn brute(z: &[f64], nx: usize, ny: usize, r: usize, max: bool) -> Vec<f64> {
        let r = r as isize;
        let mut out = vec![0.0; z.len()];
        for j in 0..ny as isize {
            for i in 0..nx as isize {
                let mut m = if max { f64::NEG_INFINITY } else { f64::INFINITY };
                for dj in -r..=r {
                    for di in -r..=r {
                        let (a, b) = (i + di, j + dj);
                        if di * di + dj * dj > r * r
                            || a < 0
                            || b < 0
                            || a >= nx as isize
                            || b >= ny as isize
                        {
                            continue;
                        }
                        let v = z[b as usize * nx + a as usize];
                        m = if max { m.max(v) } else { m.min(v) };
                    }
                }
                out[j as usize * nx + i as usize] = m;
            }
        }
        out
    }

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (s >> 11) as f64 / (1u64 << 53) as f64 * 10.0
            })
            .collect()
    }

    #[test]
    fn opening_matches_brute_force() {
        for (nx, ny, seed) in [(13, 9, 1), (1, 7, 2), (8, 1, 3), (20, 17, 4)] {
            let z = noise(nx * ny, seed);
            for r in 0..7 {
                for max in [false, true] {
                    assert_eq!(
                        morph(&z, nx, ny, r, max),
                        brute(&z, nx, ny, r, max),
                        "{nx}x{ny} r={r}"
                    );
                }
                let want = brute(&brute(&z, nx, ny, r, false), nx, ny, r, true);
                assert_eq!(open(&z, nx, ny, r), want);
            }
        }
    }

    #[test]
    fn opening_keeps_a_steep_plane_away_from_the_border() {
        // A 65° plane (rise 2.1 per cell across y): the opening only changes the cells
        // within r of the grid's border (the clipped disk), so the interior is unchanged
        // and never flagged.
        let (nx, ny) = (60, 60);
        let z: Vec<f64> =
            (0..nx * ny).map(|k| 2.1 * (k / nx) as f64 + 0.3 * (k % nx) as f64).collect();
        let r = 6;
        let o = open(&z, nx, ny, r);
        let interior = |k: usize, m: usize| {
            let (i, j) = (k % nx, k / nx);
            i >= m && j >= m && i + m < nx && j + m < ny
        };
        for k in (0..z.len()).filter(|&k| interior(k, r)) {
            assert!((o[k] - z[k]).abs() < 1e-9, "cell {k}: {} -> {}", z[k], o[k]);
        }
        let flags = progressive_filter(&z, nx, ny, 1.0, 0.15, 6.0);
        let bad: Vec<usize> = (0..z.len()).filter(|&k| flags[k] && interior(k, 21)).collect();
        assert!(bad.is_empty(), "interior cells flagged: {bad:?}");
    }

    #[test]
    fn inpainting_a_plane_is_exact() {
        let (nx, ny) = (40, 30);
        let plane = |i: usize, j: usize| 300.0 + 0.7 * i as f64 - 2.1 * j as f64;
        let mut z: Vec<f64> = (0..nx * ny).map(|k| plane(k % nx, k / nx)).collect();
        // holes: a block, scattered cells and a whole row segment, all inside the grid
        let mut holes = Vec::new();
        for j in 5..15 {
            for i in 8..20 {
                holes.push(j * nx + i);
            }
        }
        holes.extend((0..nx * ny).filter(|k| {
            k % 7 == 3 && k % nx > 0 && k % nx < nx - 1 && k / nx > 0 && k / nx < ny - 1
        }));
        for &k in &holes {
            z[k] = f64::NAN;
        }
        holes.sort_unstable();
        holes.dedup();
        assert_eq!(inpaint(&mut z, nx, ny), holes.len());
        for (k, v) in z.iter().enumerate() {
            assert!((v - plane(k % nx, k / nx)).abs() < 1e-6, "cell {k}: {v}");
        }
    }

    fn classify_points(p: &Smrf, pts: &[[f64; 3]]) -> Vec<bool> {
        let mut g = MinGrid::new(p.cell);
        for q in pts {
            g.offer(q[0], q[1], q[2]);
        }
        let c = Classifier::new(p.clone(), g).unwrap();
        pts.iter().map(|q| c.class_of(q[0], q[1], q[2], 1, 1, 0) == Some(2)).collect()
    }

    /// A regular lattice of points, `per` per metre, over [0, n) m².
    fn lattice(n: f64, per: usize, z: impl Fn(f64, f64) -> f64) -> Vec<[f64; 3]> {
        let k = (n as usize) * per;
        let mut v = Vec::new();
        for j in 0..k {
            for i in 0..k {
                let (x, y) = ((i as f64 + 0.5) / per as f64, (j as f64 + 0.5) / per as f64);
                v.push([x, y, z(x, y)]);
            }
        }
        v
    }

    #[test]
    fn a_box_building_on_a_plane_is_not_ground() {
        let inside = |x: f64, y: f64| (40.0..60.0).contains(&x) && (45.0..70.0).contains(&y);
        let pts = lattice(100.0, 2, |x, y| {
            100.0 + 0.05 * x - 0.03 * y + if inside(x, y) { 8.0 } else { 0.0 }
        });
        let got = classify_points(&Smrf::default(), &pts);
        for (q, g) in pts.iter().zip(&got) {
            assert_eq!(*g, !inside(q[0], q[1]), "point {q:?}");
        }
    }

    #[test]
    fn a_65_degree_cliff_stays_ground() {
        // plain 5 % slope, a 65° face 60 m high from y = 30 m, a plateau above
        let g = 65f64.to_radians().tan();
        let face = 60.0 / g;
        let z = |x: f64, y: f64| {
            let t = (y - 30.0).clamp(0.0, face);
            50.0 + 0.05 * y + 0.02 * x + g * t
        };
        let pts = lattice(100.0, 2, z);
        let got = classify_points(&Smrf::default(), &pts);
        let bad: Vec<_> = pts.iter().zip(&got).filter(|(_, g)| !**g).map(|(q, _)| *q).collect();
        assert!(
            bad.is_empty(),
            "{} of {} points not ground, e.g. {:?}",
            bad.len(),
            pts.len(),
            &bad[..bad.len().min(5)]
        );
    }

    #[test]
    fn unclassified_only_keeps_other_classes() {
        let p = Smrf { apply_to: GroundApplyTo::Unclassified, ..Smrf::default() };
        let mut g = MinGrid::new(1.0);
        for q in lattice(20.0, 1, |_, _| 0.0) {
            g.offer(q[0], q[1], q[2]);
        }
        let c = Classifier::new(p, g).unwrap();
        assert_eq!(c.class_of(5.0, 5.0, 0.0, 1, 1, 6), None);
        assert_eq!(c.class_of(5.0, 5.0, 0.0, 1, 1, 1), Some(2));
        assert_eq!(c.class_of(5.0, 5.0, 0.0, 1, 2, 0), Some(1));
        assert_eq!(c.class_of(5.0, 5.0, 9.0, 2, 2, 0), Some(1));
    }
}
