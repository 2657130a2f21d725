//! Helpers shared by the end-to-end tests.

use std::path::{Path, PathBuf};

/// A small synthetic site: a 200 m x 160 m slope, a 20 000 m³ scar, few large blocks,
/// a few steps of simulation.
pub const SMALL_SITE: &str = r#"
[site]
name = "small"
description = "Reduced synthetic site for the end-to-end test."

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

[diff]

[seed]
size = [1.5, 1.5, 2.0]
clearance = 0.01

[run]
dt = 0.05
steps = 20
allow_initial_overlap = false
output_every = 5
kappa = { mode = "restitution", e = 0.2, tangential_ratio = 1.0 }

[compare]
figure_width = 800
figure_height = 600
"#;

/// Every file under `root`, relative, sorted.
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}
