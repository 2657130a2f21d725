//! The shipped synthetic Piton Marcel site: seed its truth scar with the thesis's two
//! block sizes and report the fill fraction (thesis: 435 blocks = 90 %, 874 = 96 % of
//! ≈ 8e5 m³). Skips with a reason when the site has not been generated.

use std::path::PathBuf;
use talus_io::NoProgress;
use talus_seed::void::{GridGeometry, Void};
use talus_seed::{Config, seed};

fn truth_void() -> Option<Void> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/piton-marcel/truth.parquet");
    if !path.exists() {
        println!("skipped: {} not generated yet", path.display());
        return None;
    }
    let meta = talus_io::read_metadata(&path).unwrap();
    let grid: GridGeometry = serde_json::from_str(&meta[talus_schema::diff::GRID_KEY]).unwrap();
    let schema = arrow::datatypes::Schema::empty();
    let t = talus_io::read_table(&path, &schema).unwrap();
    let (rows, cols) = (t.u32s("row").unwrap(), t.u32s("col").unwrap());
    let (pre, post, scar) =
        (t.f64s("z_pre").unwrap(), t.f64s("z_post").unwrap(), t.bools("in_scar").unwrap());
    let n = grid.nx * grid.ny;
    let mut v = Void {
        grid,
        z_pre: vec![f64::NAN; n],
        z_post: vec![f64::NAN; n],
        fillable: vec![false; n],
    };
    for i in 0..rows.len() {
        let k = rows[i] as usize * grid.nx + cols[i] as usize;
        v.z_pre[k] = pre[i];
        v.z_post[k] = post[i];
        v.fillable[k] = scar[i] && pre[i].is_finite() && post[i].is_finite();
    }
    Some(v)
}

/// Upper bound of the fill by blocks of height `c` standing vertically, whatever their
/// footprint and paving: each cell column of height h holds at most ⌊h/c⌋ c of them.
fn vertical_stack_bound(v: &Void, c: f64) -> f64 {
    let a = v.grid.cell * v.grid.cell;
    let stacked: f64 = (0..v.fillable.len())
        .filter(|&i| v.fillable[i])
        .map(|i| (v.thickness(i).max(0.0) / c).floor() * c * a)
        .sum();
    stacked / v.volume()
}

#[test]
fn thesis_block_sizes_on_the_synthetic_scar() {
    let Some(v) = truth_void() else { return };
    println!(
        "scar: {} cells, {:.0} m³ to fill",
        v.fillable.iter().filter(|f| **f).count(),
        v.volume()
    );
    for (size, thesis_blocks, thesis_fill) in
        [([10.935, 9.636, 15.775], 435, 0.90), ([8.852, 7.801, 12.771], 874, 0.96)]
    {
        let config = Config { size, ..Config::default() };
        let s = seed(&config, &v, None, &PathBuf::from("truth.parquet"), &NoProgress).unwrap();
        let bound = vertical_stack_bound(&v, size[2]);
        println!(
            "{size:?}: {} blocks (thesis {thesis_blocks}), fill {:.3} (thesis {thesis_fill}), \
             vertical-stacking bound {bound:.3}, azimuth {:.1}°",
            s.summary.blocks, s.summary.fill_fraction, s.summary.azimuth_deg
        );
        // No paving of vertical blocks can beat the per-cell stacking bound. On the
        // shipped scar (a wedge 0-54 m thick, mean 22.6 m: 1.4-1.8 block heights) that
        // bound is 0.70 / 0.74, below the thesis's 0.90 / 0.96 (see the seed README
        // notes); measured 0.362 / 0.449.
        assert!(s.summary.fill_fraction <= bound + 1e-9);
        assert!(s.summary.fill_fraction > 0.35, "{}", s.summary.fill_fraction);
    }
}
