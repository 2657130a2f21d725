//! Regenerate the shipped prow site `data/piton-marcel-prow/` without building the whole
//! CLI: the same configuration as the `[synth]` table of `pipelines/piton-marcel-prow.toml`.
//! `cargo run -p talus-synth --example ship [OUT_DIR]`

use talus_io::NoProgress;
use talus_synth::{Config, ScarShape};

/// The `[synth]` table of `pipelines/piton-marcel-prow.toml`.
pub fn piton_marcel() -> Config {
    let mut c = Config { scale: 0.1, truth_cell: 1.25, ..Config::default() };
    c.scar.shape = ScarShape::Pillar;
    c.scar.width = 156.25;
    c.scar.depth = 80.0;
    c.scar.center_x = 278.125;
    c.deposit.spread = 2.3;
    c.post.misregistration = [0.1, -0.1, 0.02];
    c
}

fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "data/piton-marcel-prow".into());
    let s = talus_synth::run(&piton_marcel(), std::path::Path::new(&out), &NoProgress)
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(1)
        });
    println!("{}", serde_json::to_string_pretty(&s).unwrap());
}
