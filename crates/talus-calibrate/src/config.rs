//! The `[calibrate]` table of a site file: which parameters vary, how members are
//! chosen, how runs are scored.

use crate::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the members of the ensemble are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Search {
    /// Every combination of the parameters' levels (`values`, or `levels` points between
    /// `min` and `max`); the first parameter varies slowest.
    Grid,
    /// `samples` members, each parameter drawn uniformly (on its scale) from the member's
    /// own random stream (seed, member).
    Random,
    /// `samples` members of a Latin hypercube: each parameter's range cut into `samples`
    /// equal strata, each stratum used once, strata paired by seeded permutations.
    LatinHypercube,
}

/// Spacing of a parameter's range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// Uniform in the value.
    Linear,
    /// Uniform in the logarithm of the value (`min` > 0).
    Log,
}

/// The values one parameter takes: either a list (`values`) or a range (`min`, `max`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Spec {
    /// Explicit values (grid: each is a level; random and Latin hypercube: chosen
    /// among them with equal probability), in the parameter's unit.
    pub values: Vec<f64>,
    /// Lower end of the range, in the parameter's unit.
    pub min: Option<f64>,
    /// Upper end of the range, in the parameter's unit.
    pub max: Option<f64>,
    /// Grid search only: points from `min` to `max` inclusive, count.
    pub levels: usize,
    /// Spacing of the range.
    pub scale: Scale,
}

impl Default for Spec {
    fn default() -> Self {
        Spec { values: Vec::new(), min: None, max: None, levels: 3, scale: Scale::Linear }
    }
}

impl Spec {
    fn validate(&self, name: &str) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(format!("parameters.{name}: {m}")));
        match (self.values.is_empty(), self.min, self.max) {
            (false, None, None) => {
                if let Some(v) = self.values.iter().find(|v| !v.is_finite()) {
                    return bad(format!("value {v} is not finite"));
                }
            }
            (true, Some(lo), Some(hi)) => {
                if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                    return bad(format!("needs finite min <= max, got min = {lo}, max = {hi}"));
                }
                if self.scale == Scale::Log && lo <= 0.0 {
                    return bad(format!("scale = \"log\" needs min > 0, got {lo}"));
                }
                if self.levels == 0 {
                    return bad("levels must be >= 1".into());
                }
            }
            (false, _, _) => return bad("give either `values` or `min` and `max`, not both".into()),
            (true, _, _) => return bad("needs `values`, or both `min` and `max`".into()),
        }
        Ok(())
    }

    /// The grid levels: `values`, or `levels` points from `min` to `max` on the scale.
    pub fn levels(&self) -> Vec<f64> {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) if self.values.is_empty() => {
                let n = self.levels.max(1);
                if n == 1 {
                    return vec![self.at(lo, hi, 0.5)];
                }
                (0..n).map(|k| self.at(lo, hi, k as f64 / (n - 1) as f64)).collect()
            }
            _ => self.values.clone(),
        }
    }

    /// The value at fraction `u` ∈ [0, 1] of the range (or of the list of values).
    pub fn quantile(&self, u: f64) -> f64 {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) if self.values.is_empty() => self.at(lo, hi, u),
            _ => {
                let n = self.values.len();
                let k = ((u * n as f64).floor() as usize).min(n - 1);
                self.values[k]
            }
        }
    }

    fn at(&self, lo: f64, hi: f64, u: f64) -> f64 {
        let v = match self.scale {
            Scale::Linear => lo + u * (hi - lo),
            Scale::Log => (lo.ln() + u * (hi.ln() - lo.ln())).exp(),
        };
        // Exact ends (exp(ln x) may differ from x in the last bit).
        if u <= 0.0 {
            lo
        } else if u >= 1.0 {
            hi
        } else {
            v
        }
    }
}

/// The parameters that vary. Named ones map to keys of the site file; `keys` reaches any
/// other numeric option of `[run]` or `[seed]` by its dotted key.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Parameters {
    /// Target normal restitution e (`run.kappa.e`; `kappa.mode = "restitution"`), 1.
    pub restitution: Option<Spec>,
    /// κ_T / κ_N (`run.kappa.tangential_ratio`; `kappa.mode = "restitution"`), 1.
    pub tangential_ratio: Option<Spec>,
    /// Raw κ_N (`run.kappa.normal`; `kappa.mode = "raw"`), kg.
    pub kappa_normal: Option<Spec>,
    /// Raw κ_T (`run.kappa.tangential`; `kappa.mode = "raw"`), kg.
    pub kappa_tangential: Option<Spec>,
    /// Factor on every edge of the seeded blocks (`seed.size` and `seed.extra_sizes`
    /// times this; 1 = the site's blocks), 1. Varying it re-runs the seed stage per member.
    pub block_scale: Option<Spec>,
    /// Any other numeric option by its dotted key in the site file, under `run.` or
    /// `seed.` (e.g. `"run.separation.beta"`, or the friction coefficient's key), in the
    /// option's unit.
    pub keys: BTreeMap<String, Spec>,
}

/// Weights of the score; each term is a dimensionless loss (0 = perfect).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    /// Weight of 1 − deposit IoU, 1.
    pub iou: f64,
    /// Weight of the relative runout error |L_sim − L_obs| / L_obs, 1.
    pub runout: f64,
    /// Weight of the thickness RMSE over the mean surveyed deposit thickness
    /// (surveyed deposit volume / area), 1.
    pub thickness: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights { iou: 1.0, runout: 0.5, thickness: 0.25 }
    }
}

/// Options of `talus calibrate` (the `[calibrate]` table of a site file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// How members are chosen.
    pub search: Search,
    /// Members of a `random` or `latin_hypercube` search, count (a grid has one member per
    /// combination).
    pub samples: usize,
    /// Seed of the search: member i's values depend only on (seed, i) (random) or on
    /// (seed, samples, i) (Latin hypercube).
    pub seed: u64,
    /// Members run at once by `talus calibrate` without `--member`; 0 = the available
    /// cores, count.
    pub jobs: usize,
    /// Weights of the score.
    pub weights: Weights,
    /// The parameters that vary.
    pub parameters: Parameters,
    /// Record each member's wall time in the runs table. With `false` it is written as 0,
    /// so that the same ensemble gives a byte-identical table however it was run.
    pub wall_times: bool,
    /// The uncalibrated reference: one value for every varied parameter, by its name in
    /// the runs table (`restitution`, ..., or the dotted key), e.g. textbook friction
    /// before any calibration. When given, one more member (the last) runs with these
    /// values; the report sets its travel angle, IoU and runout beside the best member's,
    /// the survey's and Scheidegger's, to show how far the calibration moved the result.
    /// It never becomes the best member. Empty (default): no reference member.
    pub reference: BTreeMap<String, f64>,
    /// Runs per point of the search (and of the reference), count. A deposit of many
    /// blocks is chaotic: runs whose parameters differ by a percent can differ in runout by
    /// tens of metres. With `replicates` > 1 each point runs that many times, replicate 0
    /// as given and replicate r > 0 with `[run] perturbation = { speed =
    /// replicate_speed, seed = r }`, and the points are ranked by their replicates' mean
    /// score (a point with a failed replicate is not a candidate). 1 (default): one run
    /// per point, ranked by its score.
    pub replicates: usize,
    /// Speed of the replicates' perturbation of the blocks' initial velocities, m/s.
    pub replicate_speed: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            search: Search::LatinHypercube,
            samples: 16,
            seed: 1,
            jobs: 0,
            weights: Weights::default(),
            parameters: Parameters::default(),
            wall_times: true,
            reference: BTreeMap::new(),
            replicates: 1,
            replicate_speed: 1e-3,
        }
    }
}

impl Config {
    /// Check every value before any work.
    pub fn validate(&self) -> Result<(), Error> {
        let params = crate::sample::parameters(self);
        if params.is_empty() {
            return Err(Error::Config(
                "no parameter to vary: add one under [calibrate.parameters] (restitution, tangential_ratio, kappa_normal, kappa_tangential, block_scale, or keys)".into(),
            ));
        }
        for p in &params {
            p.spec.validate(&p.name)?;
        }
        for key in self.parameters.keys.keys() {
            let ok = (key.starts_with("run.") || key.starts_with("seed."))
                && key.split('.').all(|s| !s.is_empty());
            if !ok {
                return Err(Error::Config(format!(
                    "parameters.keys.\"{key}\": only options of [run] or [seed] can vary (a dotted key such as \"run.separation.beta\")"
                )));
            }
            if key == "seed.size" || key.starts_with("seed.size.") {
                return Err(Error::Config(format!(
                    "parameters.keys.\"{key}\": vary the block size with `block_scale`"
                )));
            }
        }
        if !self.reference.is_empty() {
            for (name, v) in &self.reference {
                if !params.iter().any(|p| &p.name == name) {
                    return Err(Error::Config(format!(
                        "reference.\"{name}\": not a varied parameter (the reference gives a value to each of: {})",
                        params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
                    )));
                }
                if !v.is_finite() {
                    return Err(Error::Config(format!("reference.\"{name}\": {v} is not finite")));
                }
            }
            if let Some(p) = params.iter().find(|p| !self.reference.contains_key(&p.name)) {
                return Err(Error::Config(format!(
                    "reference: no value for the varied parameter `{}` (give one for each)",
                    p.name
                )));
            }
        }
        if self.search != Search::Grid && self.samples == 0 {
            return Err(Error::Config("samples must be >= 1".into()));
        }
        let w = &self.weights;
        for (name, v) in [("iou", w.iou), ("runout", w.runout), ("thickness", w.thickness)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::Config(format!("weights.{name} must be >= 0, got {v}")));
            }
        }
        if w.iou + w.runout + w.thickness <= 0.0 {
            return Err(Error::Config("weights: at least one weight must be > 0".into()));
        }
        if self.replicates == 0 {
            return Err(Error::Config("replicates must be >= 1".into()));
        }
        if !(self.replicate_speed.is_finite() && self.replicate_speed > 0.0) {
            return Err(Error::Config(format!(
                "replicate_speed = {} m/s must be finite and > 0",
                self.replicate_speed
            )));
        }
        let n = crate::sample::member_count(self);
        if n == 0 {
            return Err(Error::Config("the search has no member".into()));
        }
        if n > 100_000 {
            return Err(Error::Config(format!("the search has {n} members (at most 100000)")));
        }
        Ok(())
    }

    /// Whether a member re-runs the seed stage (some varied parameter is a `seed` option).
    pub fn varies_seed(&self) -> bool {
        crate::sample::parameters(self).iter().any(|p| p.key.starts_with("seed."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        let c: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        c.validate().map_err(|e| e.to_string())?;
        Ok(c)
    }

    #[test]
    fn a_good_table_parses() {
        let c = parse(
            "search = \"grid\"\n[parameters]\nrestitution = { values = [0.1, 0.2] }\ntangential_ratio = { min = 0.5, max = 8.0, scale = \"log\", levels = 4 }\nkeys = { \"run.separation.beta\" = { values = [0.2] } }\n",
        )
        .unwrap();
        assert_eq!(crate::sample::member_count(&c), 2 * 4);
        assert!(!c.varies_seed());
        let c = parse("[parameters]\nblock_scale = { min = 0.8, max = 1.2 }\n").unwrap();
        assert!(c.varies_seed());
        assert_eq!(c.search, Search::LatinHypercube);
        // A reference adds one member after the search's.
        let c = parse(
            "samples = 4\nreference = { restitution = 0.0 }\n[parameters]\nrestitution = { min = 0.1, max = 0.2 }\n",
        )
        .unwrap();
        assert_eq!(crate::sample::member_count(&c), 5);
        assert_eq!(crate::sample::search_count(&c), 4);
    }

    #[test]
    fn a_bad_table_names_the_key() {
        for (text, needle) in [
            ("serach = \"grid\"\n[parameters]\nrestitution = { values = [0.1] }\n", "serach"),
            ("[parameters]\nrestitutoin = { values = [0.1] }\n", "restitutoin"),
            ("[parameters]\nrestitution = { value = [0.1] }\n", "value"),
            ("search = \"sobol\"\n[parameters]\nrestitution = { values = [0.1] }\n", "sobol"),
            ("[parameters]\nrestitution = { min = 0.5 }\n", "parameters.restitution"),
            ("[parameters]\nrestitution = { min = 0.5, max = 0.1 }\n", "parameters.restitution"),
            (
                "[parameters]\ntangential_ratio = { min = 0.0, max = 2.0, scale = \"log\" }\n",
                "parameters.tangential_ratio",
            ),
            (
                "[parameters]\nkeys = { \"compare.bulking_factor\" = { values = [1.0] } }\n",
                "compare.bulking_factor",
            ),
            (
                "[weights]\niou = -1.0\n[parameters]\nrestitution = { values = [0.1] }\n",
                "weights.iou",
            ),
            ("samples = 4\n", "no parameter"),
            (
                "reference = { restitution = 0.1, beta = 0.5 }\n[parameters]\nrestitution = { values = [0.1] }\n",
                "reference.\"beta\"",
            ),
            (
                "reference = { restitution = 0.1 }\n[parameters]\nrestitution = { values = [0.1] }\nblock_scale = { values = [1.0] }\n",
                "`block_scale`",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(needle), "expected `{needle}` in: {e}");
        }
    }
}
