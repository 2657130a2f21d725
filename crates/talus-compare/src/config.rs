//! The options of `talus compare` ([`Config`]) and their validation.

use crate::Error;

use serde::{Deserialize, Serialize};

/// Options of `talus compare`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Bulking factor applied to the block volumes when they are spread into a deposit
    /// thickness (1 = solid rock; rock-avalanche deposits are typically 1.1-1.3), dimensionless.
    pub bulking_factor: f64,
    /// Simulated thickness above which a grid cell counts in the simulated deposit area, m.
    pub min_thickness: f64,
    /// Width of each figure, pixels.
    pub figure_width: u32,
    /// Height of each figure, pixels.
    pub figure_height: u32,
    /// Most block trajectories drawn in the plan view (ids evenly spaced), count.
    pub max_trajectories: usize,
    /// Cell side of the hazard maps when the run has no survey grid (with a survey they
    /// are on the DoD grid), m.
    pub hazard_cell_size: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bulking_factor: 1.0,
            min_thickness: 0.1,
            figure_width: 1200,
            figure_height: 900,
            max_trajectories: 300,
            hazard_cell_size: 5.0,
        }
    }
}

impl Config {
    /// Check the options before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if !(self.bulking_factor.is_finite() && self.bulking_factor > 0.0) {
            return bad(format!("bulking_factor must be > 0, got {}", self.bulking_factor));
        }
        if !(self.min_thickness.is_finite() && self.min_thickness >= 0.0) {
            return bad(format!("min_thickness must be >= 0 m, got {}", self.min_thickness));
        }
        if !(self.hazard_cell_size.is_finite() && self.hazard_cell_size > 0.0) {
            return bad(format!("hazard_cell_size must be > 0 m, got {}", self.hazard_cell_size));
        }
        if !(400..=8000).contains(&self.figure_width) || !(300..=8000).contains(&self.figure_height)
        {
            return bad(format!(
                "figure size must be within 400x300 and 8000x8000 pixels, got {}x{}",
                self.figure_width, self.figure_height
            ));
        }
        Ok(())
    }
}
