//! The truth: exact pre and post surfaces sampled at the centres of a regular grid,
//! the scar and deposit masks, volumes integrated on that grid (Σ Δz · cell²), and
//! outlines of the scar and deposit.
//!
//! Outlines are "column-extent" polygons: for each grid column holding masked cells, the
//! southern edge of its southernmost and the northern edge of its northernmost masked
//! cell, joined west to east along the south and back along the north. The scar and the
//! deposit are convex along y (one run per column), so this traces their outline at the
//! grid resolution.

use crate::site::{Grid, MASK_THRESHOLD, Site};
use arrow::array::{ArrayRef, BooleanArray, Float64Array, RecordBatch, UInt32Array};
use arrow::datatypes::{DataType, Schema};
use serde::Serialize;
use std::sync::Arc;
use talus_schema::field;

/// Schema of `truth.parquet`: one row per truth-grid cell.
pub fn schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("row", DataType::UInt32, false, "1", "grid row (0 = southernmost)"),
        field("col", DataType::UInt32, false, "1", "grid column (0 = westernmost)"),
        f("x", "m", "cell centre, easting"),
        f("y", "m", "cell centre, northing"),
        f("z_pre", "m", "exact pre-event surface elevation at the cell centre"),
        f("z_post", "m", "exact post-event surface elevation at the cell centre"),
        field(
            "in_scar",
            DataType::Boolean,
            false,
            "1",
            "z_pre - z_post > 0.01 m inside the collapse scar",
        ),
        field(
            "in_deposit",
            DataType::Boolean,
            false,
            "1",
            "z_post - z_pre > 0.01 m inside the deposit",
        ),
    ])
}

/// The truth surfaces on the grid, row-major from the south-west cell.
#[derive(Debug, Clone)]
pub struct TruthGrid {
    pub grid: Grid,
    /// CRS coordinates of the grid's lower-left corner.
    pub x0: f64,
    pub y0: f64,
    pub z_pre: Vec<f64>,
    pub z_post: Vec<f64>,
    pub deficit: Vec<f64>,
    pub thickness: Vec<f64>,
}

/// A region's truth figures.
#[derive(Debug, Clone, Serialize)]
pub struct Region {
    /// Volume, m³ (Σ over the grid of the deficit, resp. thickness, × cell area).
    pub volume: f64,
    /// Area of the masked cells, m².
    pub area: f64,
    /// Largest deficit, resp. thickness, m.
    pub max_dz: f64,
    /// Outline as a closed ring of [easting, northing] (CRS), column-extent polygon.
    pub polygon: Vec<[f64; 2]>,
}

impl TruthGrid {
    /// Evaluate the site's surfaces at every cell centre (rows in parallel, fixed order).
    pub fn compute(site: &Site) -> TruthGrid {
        let grid = Grid::for_config(&site.config);
        let threads =
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 8);
        let chunk = grid.ny.div_ceil(threads);
        let parts: Vec<[Vec<f64>; 4]> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|k| {
                    s.spawn(move || {
                        let rows = (k * chunk)..((k + 1) * chunk).min(grid.ny);
                        let n = rows.len() * grid.nx;
                        let mut out = [
                            Vec::with_capacity(n),
                            Vec::with_capacity(n),
                            Vec::with_capacity(n),
                            Vec::with_capacity(n),
                        ];
                        for j in rows {
                            for i in 0..grid.nx {
                                let (x, y) = (grid.x(i), grid.y(j));
                                let pre = site.z_pre(x, y);
                                let d = site.deficit(x, y);
                                let t = site.thickness(x, y);
                                out[0].push(pre);
                                out[1].push(pre - d + t);
                                out[2].push(d);
                                out[3].push(t);
                            }
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("truth grid panicked")).collect()
        });
        let mut tg = TruthGrid {
            grid,
            x0: site.config.origin[0],
            y0: site.config.origin[1],
            z_pre: Vec::new(),
            z_post: Vec::new(),
            deficit: Vec::new(),
            thickness: Vec::new(),
        };
        for [a, b, c, d] in parts {
            tg.z_pre.extend(a);
            tg.z_post.extend(b);
            tg.deficit.extend(c);
            tg.thickness.extend(d);
        }
        tg
    }

    /// Net volume Σ (z_pre - z_post) · cell², m³.
    pub fn net_volume(&self) -> f64 {
        let a = self.grid.cell * self.grid.cell;
        self.z_pre.iter().zip(&self.z_post).map(|(p, q)| p - q).sum::<f64>() * a
    }

    fn region(&self, values: &[f64]) -> Region {
        let g = self.grid;
        let a = g.cell * g.cell;
        let volume = values.iter().sum::<f64>() * a;
        let cells = values.iter().filter(|v| **v > MASK_THRESHOLD).count();
        let max_dz = values.iter().copied().fold(0.0, f64::max);
        let mut south = Vec::new();
        let mut north = Vec::new();
        for i in 0..g.nx {
            let rows: Vec<usize> =
                (0..g.ny).filter(|&j| values[j * g.nx + i] > MASK_THRESHOLD).collect();
            if let (Some(&lo), Some(&hi)) = (rows.first(), rows.last()) {
                let x = self.x0 + g.x(i);
                south.push([x, self.y0 + lo as f64 * g.cell]);
                north.push([x, self.y0 + (hi + 1) as f64 * g.cell]);
            }
        }
        let mut polygon = south;
        polygon.extend(north.into_iter().rev());
        if let Some(&first) = polygon.first() {
            polygon.push(first);
        }
        Region { volume, area: cells as f64 * a, max_dz, polygon }
    }

    /// The scar's figures.
    pub fn scar(&self) -> Region {
        self.region(&self.deficit)
    }

    /// The deposit's figures.
    pub fn deposit(&self) -> Region {
        self.region(&self.thickness)
    }

    /// The grid geometry JSON in the `talus:grid` convention (lower-left corner, cell, shape).
    pub fn grid_json(&self) -> serde_json::Value {
        serde_json::json!({
            "x0": self.x0, "y0": self.y0, "cell": self.grid.cell, "nx": self.grid.nx, "ny": self.grid.ny
        })
    }

    /// The truth table as one record batch per block of rows.
    pub fn batches(&self) -> Result<Vec<RecordBatch>, arrow::error::ArrowError> {
        let g = self.grid;
        let schema = Arc::new(schema());
        let rows_per_batch = (1usize << 20).div_ceil(g.nx).max(1);
        let mut out = Vec::new();
        let mut j0 = 0;
        while j0 < g.ny {
            let j1 = (j0 + rows_per_batch).min(g.ny);
            let (a, b) = (j0 * g.nx, j1 * g.nx);
            let rows = (j0..j1).flat_map(|j| std::iter::repeat_n(j as u32, g.nx));
            let cols = (j0..j1).flat_map(|_| 0..g.nx as u32);
            let xs = (j0..j1).flat_map(|_| (0..g.nx).map(|i| self.x0 + g.x(i)));
            let ys = (j0..j1).flat_map(|j| std::iter::repeat_n(self.y0 + g.y(j), g.nx));
            let cols_: Vec<ArrayRef> = vec![
                Arc::new(UInt32Array::from_iter_values(rows)),
                Arc::new(UInt32Array::from_iter_values(cols)),
                Arc::new(Float64Array::from_iter_values(xs)),
                Arc::new(Float64Array::from_iter_values(ys)),
                Arc::new(Float64Array::from(self.z_pre[a..b].to_vec())),
                Arc::new(Float64Array::from(self.z_post[a..b].to_vec())),
                Arc::new(BooleanArray::from_iter(
                    self.deficit[a..b].iter().map(|d| Some(*d > MASK_THRESHOLD)),
                )),
                Arc::new(BooleanArray::from_iter(
                    self.thickness[a..b].iter().map(|t| Some(*t > MASK_THRESHOLD)),
                )),
            ];
            out.push(RecordBatch::try_new(schema.clone(), cols_)?);
            j0 = j1;
        }
        Ok(out)
    }
}
