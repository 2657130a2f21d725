//! The co-registration of a post-event survey onto a pre-event one, as `talus diff`
//! records it in the metadata of its tables (key `talus_schema::diff::REGISTRATION_KEY`,
//! JSON) and as the terrain stage reads it back: the one writer and the one reader of
//! that record.

use crate::{Provenance, Result, read_metadata};
use serde::{Deserialize, Serialize};
use std::path::Path;
use talus_schema::diff::REGISTRATION_KEY;

/// How a registration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistrationStatus {
    /// The last update moved every sampled point by less than the tolerance.
    Converged,
    /// `max_iterations` were reached in the last round.
    MaxIterations,
    /// Fewer than 6 correspondences (or a singular system: the stable ground does not fix
    /// the six degrees of freedom, e.g. a flat plane); the surveys are left as they are.
    Degenerate,
}

/// The rigid transform found and how well it fits, as the summary and provenance report it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registration {
    pub status: RegistrationStatus,
    /// Centre of the rotation (CRS units).
    pub centre: [f64; 3],
    /// Translation of the centre (CRS units): `p' = R (p − centre) + centre + translation`.
    pub translation: [f64; 3],
    /// Rotation angles about x, y, z (degrees; `R = Rz Ry Rx`).
    pub rotation_deg: [f64; 3],
    /// The rotation matrix (row major).
    pub rotation: [[f64; 3]; 3],
    /// The same transform as a 4 × 4 matrix on CRS coordinates (row major, as PDAL's
    /// filters.transformation takes it): `p' = M [p; 1]`.
    pub matrix: [[f64; 4]; 4],
    /// RMS of the point-to-plane residuals before registration, m (same points as `rms`).
    pub rms_before: f64,
    /// RMS of the point-to-plane residuals of the final round's weighted points, m.
    pub rms: f64,
    /// Post-event points sampled.
    pub points_sampled: usize,
    /// Sampled points with a weight in the final iteration (stable ground).
    pub points_used: usize,
    /// ICP iterations over all rounds.
    pub iterations: u32,
    /// Rounds of register → detect change → re-register.
    pub rounds: u32,
    /// DoD cells left out as changed (with their margin) in the final round.
    pub cells_excluded: usize,
}

impl Registration {
    /// Apply the transform to a point: `p' = R (p − centre) + centre + translation`.
    pub fn apply(&self, p: &[f64; 3]) -> [f64; 3] {
        let (r, c, t) = (&self.rotation, &self.centre, &self.translation);
        let d = [p[0] - c[0], p[1] - c[1], p[2] - c[2]];
        [0, 1, 2].map(|i| r[i][0] * d[0] + r[i][1] * d[1] + r[i][2] * d[2] + c[i] + t[i])
    }

    /// The record as it goes into a table's provenance.
    pub fn to_provenance(&self, prov: Provenance) -> Provenance {
        prov.with_extra(REGISTRATION_KEY, serde_json::to_string(self).unwrap_or_default())
    }
}

/// The registration recorded in a diff table (none when the diff did not register), with
/// the table's provenance (its inputs: pre-event, then post-event points).
pub fn read(path: &Path) -> Result<Option<(Registration, Provenance)>> {
    let meta = read_metadata(path)?;
    let Some(json) = meta.get(REGISTRATION_KEY) else {
        return Ok(None);
    };
    let reg = serde_json::from_str(json).map_err(|e| crate::IoError::Invalid {
        path: path.to_path_buf(),
        message: format!("its `{REGISTRATION_KEY}` metadata is not a registration record: {e}"),
    })?;
    Ok(Some((reg, Provenance::from_metadata(&meta))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_rotates_about_the_centre_then_translates() {
        let reg = Registration {
            status: RegistrationStatus::Converged,
            centre: [10.0, 0.0, 0.0],
            translation: [0.0, 0.0, 1.0],
            rotation_deg: [0.0, 0.0, 90.0],
            rotation: [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
            matrix: [[0.0; 4]; 4],
            rms_before: 0.0,
            rms: 0.0,
            points_sampled: 0,
            points_used: 0,
            iterations: 0,
            rounds: 0,
            cells_excluded: 0,
        };
        assert_eq!(reg.apply(&[11.0, 0.0, 0.0]), [10.0, 1.0, 1.0]);
        let back: Registration =
            serde_json::from_str(&serde_json::to_string(&reg).unwrap()).unwrap();
        assert_eq!(back, reg);
    }
}
