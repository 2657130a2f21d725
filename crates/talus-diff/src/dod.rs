//! DEM of difference on a regular grid.
//!
//! Each survey is binned into square cells; a cell's elevation is the mean, median or
//! minimum of its points and its 1-sigma error combines the standard error of the points
//! (`s / sqrt(n)`, zero for a single point) with the survey's stated vertical accuracy:
//! `sigma^2 = s^2 / n + accuracy^2`. Then `dz = z_post - z_pre`,
//! `sigma_dz = sqrt(sigma_pre^2 + sigma_post^2)`, `LoD = z_c sigma_dz` with `z_c` the
//! two-sided normal quantile of the confidence, and a cell is significant when
//! `|dz| > LoD`.
//!
//! The slope of each surface, `grad z` by central differences of the cell elevations
//! (one-sided next to a missing cell), is kept for volume errors: a horizontal
//! registration shift `d` of a survey changes its cell elevations by `-grad z . d`.

use crate::config::{CellStatistic, DodConfig};
use serde::{Deserialize, Serialize};

/// Grid geometry, stored as JSON under `talus_schema::diff::GRID_KEY`: (x0, y0) is the
/// lower-left corner of cell (row 0, col 0); rows grow northward, columns eastward.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    pub x0: f64,
    pub y0: f64,
    pub cell: f64,
    pub nx: usize,
    pub ny: usize,
}

impl Grid {
    /// The grid of `cell`-sized cells covering `[xmin, xmax] x [ymin, ymax]`, with its
    /// origin snapped to a multiple of the cell size.
    pub fn covering(xmin: f64, ymin: f64, xmax: f64, ymax: f64, cell: f64) -> Grid {
        let x0 = (xmin / cell).floor() * cell;
        let y0 = (ymin / cell).floor() * cell;
        let nx = (((xmax - x0) / cell).floor() as usize + 1).max(1);
        let ny = (((ymax - y0) / cell).floor() as usize + 1).max(1);
        Grid { x0, y0, cell, nx, ny }
    }

    /// Whether the grid has more than `max` cells (saturating: never overflows).
    pub fn exceeds(&self, max: usize) -> bool {
        self.nx.saturating_mul(self.ny) > max
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.nx * self.ny
    }

    /// Whether the grid has no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row-major index of the cell holding (x, y), if inside.
    pub fn index_of(&self, x: f64, y: f64) -> Option<usize> {
        let c = ((x - self.x0) / self.cell).floor();
        let r = ((y - self.y0) / self.cell).floor();
        if c < 0.0 || r < 0.0 || c >= self.nx as f64 || r >= self.ny as f64 {
            return None;
        }
        Some(r as usize * self.nx + c as usize)
    }

    /// Centre of cell `i`.
    pub fn centre(&self, i: usize) -> (f64, f64) {
        let (r, c) = (i / self.nx, i % self.nx);
        (self.x0 + (c as f64 + 0.5) * self.cell, self.y0 + (r as f64 + 0.5) * self.cell)
    }

    /// Area of one cell, m^2.
    pub fn cell_area(&self) -> f64 {
        self.cell * self.cell
    }
}

/// Per-cell surface of one survey.
#[derive(Debug, Clone)]
pub struct Surface {
    /// Elevation (NaN where fewer than `min_points`).
    pub z: Vec<f64>,
    /// Squared standard error of the elevation from the point spread (`s^2 / n`), m^2.
    pub se2: Vec<f64>,
    /// Points per cell.
    pub n: Vec<u32>,
    /// Gradient `(dz/dx, dz/dy)` of the elevations (zero where undefined).
    pub grad: Vec<[f64; 2]>,
}

/// Bin points into the grid and compute each cell's elevation and standard error.
pub fn surface(grid: &Grid, pts: &[[f64; 3]], cfg: &DodConfig) -> Surface {
    let m = grid.len();
    // Counting sort of the elevations by cell (deterministic, O(n)).
    let idx: Vec<u32> =
        pts.iter().map(|p| grid.index_of(p[0], p[1]).map_or(u32::MAX, |i| i as u32)).collect();
    let mut start = vec![0usize; m + 1];
    for &i in &idx {
        if i != u32::MAX {
            start[i as usize + 1] += 1;
        }
    }
    for i in 0..m {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut zs = vec![0.0f64; start[m]];
    for (p, &i) in pts.iter().zip(&idx) {
        if i != u32::MAX {
            zs[fill[i as usize]] = p[2];
            fill[i as usize] += 1;
        }
    }
    let mut z = vec![f64::NAN; m];
    let mut se2 = vec![f64::NAN; m];
    let mut n = vec![0u32; m];
    for c in 0..m {
        let cell = &mut zs[start[c]..start[c + 1]];
        let k = cell.len();
        n[c] = k as u32;
        if k == 0 || (k as u32) < cfg.min_points {
            continue;
        }
        let mean = cell.iter().sum::<f64>() / k as f64;
        let var = if k > 1 {
            cell.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1) as f64
        } else {
            0.0
        };
        se2[c] = var / k as f64;
        z[c] = match cfg.statistic {
            CellStatistic::Mean => mean,
            CellStatistic::Min => cell.iter().copied().fold(f64::INFINITY, f64::min),
            CellStatistic::Median => {
                cell.sort_unstable_by(f64::total_cmp);
                if k % 2 == 1 { cell[k / 2] } else { 0.5 * (cell[k / 2 - 1] + cell[k / 2]) }
            }
        };
    }
    let grad = gradient(grid, &z);
    Surface { z, se2, n, grad }
}

/// Central-difference gradient of a gridded surface; one-sided where a neighbour is
/// missing, zero along an axis with no finite neighbour (or where `z` is NaN).
pub fn gradient(grid: &Grid, z: &[f64]) -> Vec<[f64; 2]> {
    let (nx, ny, h) = (grid.nx, grid.ny, grid.cell);
    let at = |r: usize, c: usize| z[r * nx + c];
    let axis = |lo: Option<f64>, mid: f64, hi: Option<f64>| -> f64 {
        match (lo.filter(|v| v.is_finite()), hi.filter(|v| v.is_finite())) {
            (Some(a), Some(b)) => (b - a) / (2.0 * h),
            (Some(a), None) => (mid - a) / h,
            (None, Some(b)) => (b - mid) / h,
            (None, None) => 0.0,
        }
    };
    (0..grid.len())
        .map(|i| {
            let (r, c) = (i / nx, i % nx);
            let m = z[i];
            if !m.is_finite() {
                return [0.0, 0.0];
            }
            let gx = axis((c > 0).then(|| at(r, c - 1)), m, (c + 1 < nx).then(|| at(r, c + 1)));
            let gy = axis((r > 0).then(|| at(r - 1, c)), m, (r + 1 < ny).then(|| at(r + 1, c)));
            [gx, gy]
        })
        .collect()
}

/// The DEM of difference, one entry per grid cell (row-major).
#[derive(Debug, Clone)]
pub struct Dod {
    pub grid: Grid,
    pub pre: Surface,
    pub post: Surface,
    /// post - pre, NaN unless both elevations exist.
    pub dz: Vec<f64>,
    /// 1-sigma error of dz.
    pub dz_error: Vec<f64>,
    /// Level of detection.
    pub lod: Vec<f64>,
    /// |dz| > lod.
    pub significant: Vec<bool>,
    /// Point-spread (random) part of dz's variance, m^2.
    pub random_var: Vec<f64>,
    /// Survey-accuracy (systematic) part of dz's variance, m^2 (same for every cell).
    pub systematic_var: f64,
    /// Horizontal registration variances (per axis) of the pre and post surveys, m^2.
    pub horizontal_var: [f64; 2],
    /// The z-score used for the LoD.
    pub z_score: f64,
}

/// Difference two gridded surveys.
pub fn difference(grid: Grid, pre: &[[f64; 3]], post: &[[f64; 3]], cfg: &DodConfig) -> Dod {
    difference_registered(grid, pre, post, cfg, 0.0)
}

/// [`difference`] of surveys co-registered with an RMS residual `registration_rms` (m),
/// which adds `registration_rms^2` to every cell's systematic variance.
pub fn difference_registered(
    grid: Grid,
    pre: &[[f64; 3]],
    post: &[[f64; 3]],
    cfg: &DodConfig,
    registration_rms: f64,
) -> Dod {
    let s_pre = surface(&grid, pre, cfg);
    let s_post = surface(&grid, post, cfg);
    let z_score = normal_quantile(0.5 + 0.5 * cfg.confidence);
    let systematic_var =
        cfg.pre_accuracy.powi(2) + cfg.post_accuracy.powi(2) + registration_rms.powi(2);
    let m = grid.len();
    let (mut dz, mut dz_error, mut lod) = (vec![f64::NAN; m], vec![f64::NAN; m], vec![f64::NAN; m]);
    let mut significant = vec![false; m];
    let mut random_var = vec![f64::NAN; m];
    for i in 0..m {
        if s_pre.z[i].is_finite() && s_post.z[i].is_finite() {
            dz[i] = s_post.z[i] - s_pre.z[i];
            random_var[i] = s_pre.se2[i] + s_post.se2[i];
            dz_error[i] = (random_var[i] + systematic_var).sqrt();
            lod[i] = z_score * dz_error[i];
            significant[i] = dz[i].abs() > lod[i];
        }
    }
    Dod {
        grid,
        pre: s_pre,
        post: s_post,
        dz,
        dz_error,
        lod,
        significant,
        random_var,
        systematic_var,
        horizontal_var: [cfg.pre_horizontal_accuracy.powi(2), cfg.post_horizontal_accuracy.powi(2)],
        z_score,
    }
}

/// Quantile function of the standard normal distribution (Acklam's rational
/// approximation, relative error < 1.2e-9), for 0 < p < 1.
#[allow(clippy::excessive_precision)] // Acklam's published coefficients, verbatim
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383577518672690e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] =
        [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let p_low = 0.02425;
    if p < p_low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - p_low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_tables() {
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-8);
        assert!((normal_quantile(0.95) - 1.644_853_626_951_472_6).abs() < 1e-8);
        assert!((normal_quantile(0.995) - 2.575_829_303_548_901).abs() < 1e-8);
        assert!((normal_quantile(0.5)).abs() < 1e-12);
    }

    #[test]
    fn grid_indexing_round_trips() {
        let g = Grid::covering(10.2, 20.7, 19.9, 25.0, 1.0);
        assert_eq!((g.x0, g.y0, g.nx, g.ny), (10.0, 20.0, 10, 6));
        let i = g.index_of(12.5, 23.5).unwrap();
        assert_eq!(g.centre(i), (12.5, 23.5));
        assert!(g.index_of(9.99, 21.0).is_none());
    }

    #[test]
    fn cell_statistics_and_errors() {
        let g = Grid { x0: 0.0, y0: 0.0, cell: 1.0, nx: 1, ny: 1 };
        let pts = [[0.5, 0.5, 1.0], [0.5, 0.5, 2.0], [0.5, 0.5, 6.0]];
        let mut cfg = DodConfig::default();
        let s = surface(&g, &pts, &cfg);
        assert_eq!(s.z[0], 3.0);
        // s^2 = ((-2)^2 + (-1)^2 + 3^2) / 2 = 7, se^2 = 7/3
        assert!((s.se2[0] - 7.0 / 3.0).abs() < 1e-12);
        cfg.statistic = CellStatistic::Median;
        assert_eq!(surface(&g, &pts, &cfg).z[0], 2.0);
        cfg.statistic = CellStatistic::Min;
        assert_eq!(surface(&g, &pts, &cfg).z[0], 1.0);
        cfg.min_points = 4;
        assert!(surface(&g, &pts, &cfg).z[0].is_nan());
    }
}
