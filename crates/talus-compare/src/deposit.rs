//! Simulated deposit thickness on the DoD grid.
//!
//! A block's horizontal footprint is the convex hull of its eight corners projected on
//! the plane; its volume (times the bulking factor) is spread uniformly over it, each
//! cell receiving the share given by the exact area of the footprint clipped to the
//! cell (Sutherland–Hodgman against the cell's square). Volume is conserved up to what
//! falls outside the grid, which is reported.
//!
//! Only *deposited* blocks are spread: still in the domain (`active`) and with their
//! centre outside the scar. Blocks left in the scar are counted apart (see
//! [`crate::metrics`]).

use crate::inputs::{Blocks, CELL_DEPOSIT, CELL_SCAR, Grid, Survey};
use crate::{Config, Error};
use arrow::array::{ArrayRef, BinaryArray, BooleanArray, Float64Array, RecordBatch, UInt32Array};
use polars::prelude::*;
use std::path::Path;
use std::sync::Arc;
use talus_io::Provenance;

/// Rotation matrix (body to world) of a unit quaternion (w, x, y, z).
pub fn rotation(q: [f64; 4]) -> [[f64; 3]; 3] {
    let n = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).sqrt();
    let (w, x, y, z) =
        if n > 0.0 { (q[0] / n, q[1] / n, q[2] / n, q[3] / n) } else { (1.0, 0.0, 0.0, 0.0) };
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)],
    ]
}

/// Half the vertical extent of a rotated box of edges `(a, b, c)`, m.
pub fn half_height(dims: [f64; 3], q: [f64; 4]) -> f64 {
    let r = rotation(q);
    0.5 * (0..3).map(|k| r[2][k].abs() * dims[k]).sum::<f64>()
}

/// Horizontal footprint of a box centred at `(x, y)`: convex polygon, counter-clockwise.
pub fn footprint(dims: [f64; 3], q: [f64; 4], x: f64, y: f64) -> Vec<[f64; 2]> {
    let r = rotation(q);
    let mut pts = Vec::with_capacity(8);
    for sa in [-0.5, 0.5] {
        for sb in [-0.5, 0.5] {
            for sc in [-0.5, 0.5] {
                let l = [sa * dims[0], sb * dims[1], sc * dims[2]];
                pts.push([
                    x + r[0][0] * l[0] + r[0][1] * l[1] + r[0][2] * l[2],
                    y + r[1][0] * l[0] + r[1][1] * l[1] + r[1][2] * l[2],
                ]);
            }
        }
    }
    convex_hull(pts)
}

fn cross(o: [f64; 2], a: [f64; 2], b: [f64; 2]) -> f64 {
    (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
}

/// Convex hull (Andrew's monotone chain), counter-clockwise, no repeated end point.
pub fn convex_hull(mut pts: Vec<[f64; 2]>) -> Vec<[f64; 2]> {
    pts.sort_by(|a, b| a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1])));
    pts.dedup();
    if pts.len() < 3 {
        return pts;
    }
    let mut hull: Vec<[f64; 2]> = Vec::with_capacity(2 * pts.len());
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &[f64; 2]>> =
            if pass == 0 { Box::new(pts.iter()) } else { Box::new(pts.iter().rev()) };
        for &p in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 0.0
            {
                hull.pop();
            }
            hull.push(p);
        }
        hull.pop();
    }
    hull
}

/// Area of a simple polygon (positive when counter-clockwise).
pub fn polygon_area(p: &[[f64; 2]]) -> f64 {
    let n = p.len();
    (0..n)
        .map(|i| {
            let (a, b) = (p[i], p[(i + 1) % n]);
            a[0] * b[1] - b[0] * a[1]
        })
        .sum::<f64>()
        * 0.5
}

/// Area of a convex counter-clockwise polygon clipped to the rectangle
/// `[xmin, xmax] × [ymin, ymax]`.
pub fn clipped_area(poly: &[[f64; 2]], xmin: f64, ymin: f64, xmax: f64, ymax: f64) -> f64 {
    let mut cur: Vec<[f64; 2]> = poly.to_vec();
    // Each edge: keep points with s(p) >= 0.
    let edges: [(usize, f64, f64); 4] =
        [(0, xmin, 1.0), (0, xmax, -1.0), (1, ymin, 1.0), (1, ymax, -1.0)];
    for (axis, bound, sign) in edges {
        if cur.is_empty() {
            return 0.0;
        }
        let s = |p: [f64; 2]| sign * (p[axis] - bound);
        let mut next = Vec::with_capacity(cur.len() + 2);
        for i in 0..cur.len() {
            let (p, q) = (cur[i], cur[(i + 1) % cur.len()]);
            let (sp, sq) = (s(p), s(q));
            if sp >= 0.0 {
                next.push(p);
            }
            if (sp >= 0.0) != (sq >= 0.0) {
                let t = sp / (sp - sq);
                next.push([p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1])]);
            }
        }
        cur = next;
    }
    if cur.len() < 3 { 0.0 } else { polygon_area(&cur).abs() }
}

/// Volume of one box spread over the grid: `(cell index, volume)` pairs and the volume
/// that fell outside the grid.
pub fn spread_block(
    grid: &Grid,
    dims: [f64; 3],
    q: [f64; 4],
    x: f64,
    y: f64,
    volume: f64,
) -> (Vec<(usize, f64)>, f64) {
    let fp = footprint(dims, q, x, y);
    let area = polygon_area(&fp);
    if fp.len() < 3 || area <= 0.0 {
        return match grid.cell_of(x, y) {
            Some((r, c)) => (vec![(grid.index(r, c), volume)], 0.0),
            None => (vec![], volume),
        };
    }
    let (mut xmin, mut ymin, mut xmax, mut ymax) =
        (f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
    for p in &fp {
        xmin = xmin.min(p[0]);
        xmax = xmax.max(p[0]);
        ymin = ymin.min(p[1]);
        ymax = ymax.max(p[1]);
    }
    let c0 = ((xmin - grid.x0) / grid.cell).floor() as i64;
    let c1 = ((xmax - grid.x0) / grid.cell).floor() as i64;
    let r0 = ((ymin - grid.y0) / grid.cell).floor() as i64;
    let r1 = ((ymax - grid.y0) / grid.cell).floor() as i64;
    let mut out = Vec::new();
    let mut on_grid = 0.0;
    for r in r0.max(0)..=r1.min(grid.ny as i64 - 1) {
        for c in c0.max(0)..=c1.min(grid.nx as i64 - 1) {
            let cx = grid.x0 + c as f64 * grid.cell;
            let cy = grid.y0 + r as f64 * grid.cell;
            let a = clipped_area(&fp, cx, cy, cx + grid.cell, cy + grid.cell);
            if a > 0.0 {
                let v = volume * a / area;
                on_grid += v;
                out.push((grid.index(r as usize, c as usize), v));
            }
        }
    }
    (out, (volume - on_grid).max(0.0))
}

/// The simulated and surveyed deposit thickness on the DoD grid.
#[derive(Debug, Clone)]
pub struct ThicknessMap {
    pub grid: Grid,
    /// Union of simulated, surveyed-deposit and scar cells, sorted by `cell`: `cell`,
    /// `row`, `col`, `x`, `y`, `thickness_simulated`, `thickness_surveyed`,
    /// `in_simulated`, `in_surveyed`, `in_scar`.
    pub frame: DataFrame,
    /// Dense simulated thickness (0 where none), indexed by [`Grid::index`], m.
    pub simulated: Vec<f64>,
    /// Dense surveyed thickness (the frame's `thickness_surveyed`: dz where positive in a
    /// deposit cell, 0 elsewhere), indexed by [`Grid::index`], m.
    pub surveyed: Vec<f64>,
    /// Per final block: deposited (active and centre outside the scar).
    pub deposited: Vec<bool>,
    /// Per final block: active with its centre in a scar cell.
    pub in_scar: Vec<bool>,
    /// Bulked volume of the deposited blocks that fell outside the grid, m³.
    pub volume_off_grid: f64,
}

/// Spread the deposited blocks on the survey's grid and join with the surveyed deposit.
pub fn thickness_map(
    config: &Config,
    blocks: &Blocks,
    survey: &Survey,
) -> Result<ThicknessMap, Error> {
    let grid = survey.grid;
    let mut in_scar = vec![false; blocks.len()];
    let mut deposited = vec![false; blocks.len()];
    let (mut cells, mut vols) = (Vec::new(), Vec::new());
    let mut off = 0.0;
    for i in 0..blocks.len() {
        if !blocks.active[i] {
            continue;
        }
        let scar = grid
            .cell_of(blocks.x[i], blocks.y[i])
            .is_some_and(|(r, c)| survey.class[grid.index(r, c)] == CELL_SCAR);
        in_scar[i] = scar;
        deposited[i] = !scar;
        if scar {
            continue;
        }
        let dims = [blocks.a[i], blocks.b[i], blocks.c[i]];
        let v = blocks.volume(i) * config.bulking_factor;
        let (parts, o) = spread_block(&grid, dims, blocks.q[i], blocks.x[i], blocks.y[i], v);
        off += o;
        for (k, v) in parts {
            cells.push(k as i64);
            vols.push(v);
        }
    }
    let area = grid.cell_area();
    let contributions = DataFrame::new_infer_height(vec![
        Column::new("cell".into(), cells),
        Column::new("volume".into(), vols),
    ])?;
    let simulated = contributions
        .lazy()
        .group_by([col("cell")])
        .agg([(col("volume").sum() / lit(area)).alias("thickness_simulated")]);
    let cells = survey.cells.clone().lazy();
    let surveyed = cells.clone().filter(col("kind").eq(lit("deposit"))).select([
        col("cell"),
        when(col("dz").gt(lit(0.0)))
            .then(col("dz"))
            .otherwise(lit(0.0))
            .alias("thickness_surveyed"),
        lit(true).alias("in_surveyed"),
    ]);
    let scar =
        cells.filter(col("kind").eq(lit("scar"))).select([col("cell"), lit(true).alias("in_scar")]);
    // Full outer join on the cell index, keeping one `cell` column.
    let full = |l: LazyFrame, r: LazyFrame| {
        l.join(r, [col("cell")], [col("cell")], JoinArgs::new(JoinType::Full))
            .with_column(
                when(col("cell").is_null())
                    .then(col("cell_right"))
                    .otherwise(col("cell"))
                    .alias("cell"),
            )
            .drop(Selector::ByName {
                names: Arc::from(vec![PlSmallStr::from("cell_right")]),
                strict: true,
            })
    };
    let frame = full(full(simulated, surveyed), scar)
        .with_columns([
            col("thickness_simulated").fill_null(lit(0.0)),
            col("thickness_surveyed").fill_null(lit(0.0)),
            col("in_surveyed").fill_null(lit(false)),
            col("in_scar").fill_null(lit(false)),
        ])
        .with_column(col("thickness_simulated").gt(lit(config.min_thickness)).alias("in_simulated"))
        .sort(["cell"], Default::default())
        .collect()?;
    // Row, column and cell centre of each linear index.
    let cell_ids: Vec<usize> = {
        let c = frame.column("cell")?.i64()?;
        (0..c.len()).map(|i| c.get(i).unwrap_or(0) as usize).collect()
    };
    let rows: Vec<u32> = cell_ids.iter().map(|k| (k / grid.nx) as u32).collect();
    let cols: Vec<u32> = cell_ids.iter().map(|k| (k % grid.nx) as u32).collect();
    let xs: Vec<f64> = cols.iter().map(|c| grid.x0 + (*c as f64 + 0.5) * grid.cell).collect();
    let ys: Vec<f64> = rows.iter().map(|r| grid.y0 + (*r as f64 + 0.5) * grid.cell).collect();
    let geometry = DataFrame::new_infer_height(vec![
        Column::new("row".into(), rows),
        Column::new("col".into(), cols),
        Column::new("x".into(), xs),
        Column::new("y".into(), ys),
    ])?;
    let frame = frame.hstack(geometry.columns())?.select([
        "cell",
        "row",
        "col",
        "x",
        "y",
        "thickness_simulated",
        "thickness_surveyed",
        "in_simulated",
        "in_surveyed",
        "in_scar",
    ])?;
    let mut dense = vec![0.0; grid.nx * grid.ny];
    let (c, t) = (frame.column("cell")?.i64()?, frame.column("thickness_simulated")?.f64()?);
    for i in 0..frame.height() {
        if let (Some(k), Some(v)) = (c.get(i), t.get(i)) {
            dense[k as usize] = v;
        }
    }
    let surveyed = (0..survey.dz.len())
        .map(|k| {
            let deposit = survey.class[k] == CELL_DEPOSIT && survey.dz[k] > 0.0;
            if deposit { survey.dz[k] } else { 0.0 }
        })
        .collect();
    Ok(ThicknessMap {
        grid,
        frame,
        simulated: dense,
        surveyed,
        deposited,
        in_scar,
        volume_off_grid: off,
    })
}

fn f64_col(df: &DataFrame, name: &str) -> Result<Vec<f64>, Error> {
    let c = df.column(name)?.f64()?;
    Ok((0..c.len()).map(|i| c.get(i).unwrap_or(f64::NAN)).collect())
}

fn bool_col(df: &DataFrame, name: &str) -> Result<Vec<bool>, Error> {
    let c = df.column(name)?.bool()?;
    Ok((0..c.len()).map(|i| c.get(i).unwrap_or(false)).collect())
}

fn u32_col(df: &DataFrame, name: &str) -> Result<Vec<u32>, Error> {
    let c = df.column(name)?.u32()?;
    Ok((0..c.len()).map(|i| c.get(i).unwrap_or(0)).collect())
}

/// Write the thickness map (`thickness.parquet`, GeoParquet points at cell centres).
pub fn write_thickness(path: &Path, map: &ThicknessMap, prov: &Provenance) -> Result<(), Error> {
    let df = &map.frame;
    let (x, y) = (f64_col(df, "x")?, f64_col(df, "y")?);
    let geometry: Vec<Vec<u8>> =
        x.iter().zip(&y).map(|(x, y)| talus_io::geo::wkb_point(*x, *y)).collect();
    let schema = Arc::new(talus_schema::compare::thickness_schema());
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from(u32_col(df, "row")?)),
        Arc::new(UInt32Array::from(u32_col(df, "col")?)),
        Arc::new(Float64Array::from(x.clone())),
        Arc::new(Float64Array::from(y.clone())),
        Arc::new(Float64Array::from(f64_col(df, "thickness_simulated")?)),
        Arc::new(Float64Array::from(f64_col(df, "thickness_surveyed")?)),
        Arc::new(BooleanArray::from(bool_col(df, "in_simulated")?)),
        Arc::new(BooleanArray::from(bool_col(df, "in_surveyed")?)),
        Arc::new(BooleanArray::from(bool_col(df, "in_scar")?)),
        Arc::new(BinaryArray::from_iter_values(geometry.iter())),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| Error::input(path, format!("building the thickness table: {e}")))?;
    let bbox = if x.is_empty() {
        None
    } else {
        let fold = |v: &[f64], f: fn(f64, f64) -> f64, init: f64| v.iter().copied().fold(init, f);
        Some([
            fold(&x, f64::min, f64::INFINITY),
            fold(&y, f64::min, f64::INFINITY),
            fold(&x, f64::max, f64::NEG_INFINITY),
            fold(&y, f64::max, f64::NEG_INFINITY),
        ])
    };
    let geo = talus_io::geo::geo_metadata(
        "geometry",
        &["Point"],
        prov.crs.as_ref(),
        bbox.as_ref().map(|b| &b[..]),
    );
    let prov = prov.clone().with_extra(talus_io::geo::GEO_KEY, geo);
    talus_io::write_parquet(path, schema, &[batch], &prov)?;
    Ok(())
}

/// The simulated and surveyed deposit thickness as GeoTIFF rasters on the survey's grid
/// (`thickness_simulated.tif`, `thickness_surveyed.tif`; 0 outside the deposits, NaN
/// where the survey has no data), for GIS. Returns the files written.
pub fn write_thickness_rasters(
    dir: &std::path::Path,
    map: &ThicknessMap,
    survey: &crate::inputs::Survey,
    crs: Option<&talus_io::Crs>,
) -> Result<Vec<std::path::PathBuf>, Error> {
    use talus_schema::file_names::compare as names;
    let g = map.grid;
    let spec = talus_io::geotiff::GridSpec { x0: g.x0, y0: g.y0, cell: g.cell, nx: g.nx, ny: g.ny };
    let with_nodata = |v: &[f64]| -> Vec<f64> {
        v.iter().zip(&survey.dz).map(|(t, dz)| if dz.is_finite() { *t } else { f64::NAN }).collect()
    };
    let (simulated, surveyed) = (with_nodata(&map.simulated), with_nodata(&map.surveyed));
    let mut written = Vec::new();
    for (name, values) in
        [(names::THICKNESS_SIMULATED_TIF, &simulated), (names::THICKNESS_SURVEYED_TIF, &surveyed)]
    {
        let path = dir.join(name);
        talus_io::geotiff::write(&path, &spec, values, crs)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footprint_of_axis_aligned_box_is_its_base() {
        let fp = footprint([2.0, 4.0, 1.0], [1.0, 0.0, 0.0, 0.0], 10.0, 20.0);
        assert_eq!(fp.len(), 4);
        assert!((polygon_area(&fp) - 8.0).abs() < 1e-12);
        assert!((half_height([2.0, 4.0, 1.0], [1.0, 0.0, 0.0, 0.0]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn footprint_of_box_rotated_about_z_keeps_its_area() {
        let t = 0.3_f64;
        let q = [(t / 2.0).cos(), 0.0, 0.0, (t / 2.0).sin()];
        let fp = footprint([2.0, 4.0, 1.0], q, 0.0, 0.0);
        assert!((polygon_area(&fp) - 8.0).abs() < 1e-12);
        // Tilted about x by 90°: the footprint is a x c.
        let q =
            [(std::f64::consts::FRAC_PI_4).cos(), (std::f64::consts::FRAC_PI_4).sin(), 0.0, 0.0];
        let fp = footprint([2.0, 4.0, 1.0], q, 0.0, 0.0);
        assert!((polygon_area(&fp) - 2.0).abs() < 1e-9);
        assert!((half_height([2.0, 4.0, 1.0], q) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn clipping_matches_hand_computed_areas() {
        let sq = [[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0]];
        assert!((clipped_area(&sq, 1.0, 1.0, 3.0, 3.0) - 1.0).abs() < 1e-12);
        assert!((clipped_area(&sq, -1.0, -1.0, 3.0, 3.0) - 4.0).abs() < 1e-12);
        assert_eq!(clipped_area(&sq, 5.0, 5.0, 6.0, 6.0), 0.0);
        // Diamond |x| + |y| <= 1 clipped to the first quadrant: 1/2.
        let d = [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]];
        assert!((clipped_area(&d, 0.0, 0.0, 5.0, 5.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn spreading_conserves_volume() {
        let grid = Grid { x0: 0.0, y0: 0.0, cell: 1.0, nx: 20, ny: 20 };
        for (k, t) in [0.0_f64, 0.4, 1.1, 2.5].iter().enumerate() {
            let q = [(t / 2.0).cos(), (t / 2.0).sin() * 0.6, 0.0, (t / 2.0).sin() * 0.8];
            let (parts, off) =
                spread_block(&grid, [3.0, 2.0, 1.5], q, 10.3 + k as f64 * 0.1, 9.7, 9.0);
            let sum: f64 = parts.iter().map(|p| p.1).sum();
            assert!((sum - 9.0).abs() < 1e-9, "{sum}");
            assert!(off.abs() < 1e-9, "{off}");
        }
        // Half the block off the west edge.
        let (parts, off) =
            spread_block(&grid, [2.0, 2.0, 2.0], [1.0, 0.0, 0.0, 0.0], 0.0, 10.0, 8.0);
        let sum: f64 = parts.iter().map(|p| p.1).sum();
        assert!((sum - 4.0).abs() < 1e-9 && (off - 4.0).abs() < 1e-9);
    }
}
