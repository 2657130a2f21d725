//! The thesis's input files: `size_N.data` (one line `a b c` per solid) and
//! `position_N.data` (six lines per solid: position, velocity, angular velocity, then
//! body axes i, j, k in world coordinates — the columns of the rotation matrix).
//!
//! Numbers are written with Rust's shortest round-trip representation, so positions,
//! velocities, angular velocities and sizes survive a read/write cycle bit for bit. The
//! axes become a unit quaternion (the nearest rotation to the file's matrix, which the
//! thesis printed with 12 significant digits, so is orthonormal to ~1e-12 only); written
//! back they agree with the file to that precision.

use crate::Error;
use crate::boxes::Block;
use nalgebra::{Matrix3, Rotation3, UnitQuaternion, Vector3};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Paths of the size and position files of N solids in `dir`.
pub fn paths(dir: &Path, n: usize) -> (PathBuf, PathBuf) {
    (dir.join(format!("size_{n}.data")), dir.join(format!("position_{n}.data")))
}

fn bad(path: &Path, line: usize, message: impl Into<String>) -> Error {
    Error::Input { path: path.to_path_buf(), message: format!("line {line}: {}", message.into()) }
}

fn triples(path: &Path) -> Result<Vec<[f64; 3]>, Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| talus_io::IoError::Os { path: path.to_path_buf(), source })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|t| {
                t.parse::<f64>().map_err(|_| bad(path, i + 1, format!("`{t}` is not a number")))
            })
            .collect::<Result<_, _>>()?;
        if v.len() != 3 || !v.iter().all(|x| x.is_finite()) {
            return Err(bad(path, i + 1, "expected three finite numbers"));
        }
        out.push([v[0], v[1], v[2]]);
    }
    Ok(out)
}

/// The rotation nearest to a matrix whose columns are the body axes.
pub fn quaternion_of_axes(i: [f64; 3], j: [f64; 3], k: [f64; 3]) -> UnitQuaternion<f64> {
    let m = Matrix3::from_columns(&[Vector3::from(i), Vector3::from(j), Vector3::from(k)]);
    let guess = Rotation3::from_matrix_unchecked(m);
    let r = Rotation3::from_matrix_eps(&m, 1e-16, 100, guess);
    UnitQuaternion::from_rotation_matrix(&r)
}

/// Read `size_N.data` and `position_N.data` from `dir`.
pub fn read(dir: &Path, n: usize) -> Result<Vec<Block>, Error> {
    let (sp, pp) = paths(dir, n);
    let sizes = triples(&sp)?;
    let pos = triples(&pp)?;
    if sizes.len() != n {
        return Err(bad(&sp, sizes.len(), format!("{} solids, expected N = {n}", sizes.len())));
    }
    if pos.len() != 6 * n {
        return Err(bad(
            &pp,
            pos.len(),
            format!("{} lines of three numbers, expected 6 N = {}", pos.len(), 6 * n),
        ));
    }
    let mut blocks = Vec::with_capacity(n);
    for s in 0..n {
        if sizes[s].iter().any(|&e| e <= 0.0) {
            return Err(bad(&sp, s + 1, "non-positive block size"));
        }
        let l = &pos[6 * s..6 * s + 6];
        let m =
            Matrix3::from_columns(&[Vector3::from(l[3]), Vector3::from(l[4]), Vector3::from(l[5])]);
        let err = (m.transpose() * m - Matrix3::identity()).abs().max();
        if err > 1e-6 || m.determinant() < 0.0 {
            return Err(bad(
                &pp,
                6 * s + 4,
                format!(
                    "axes of solid {s} are not a right-handed orthonormal frame (error {err:.2e})"
                ),
            ));
        }
        blocks.push(Block {
            size: sizes[s],
            centre: l[0],
            orientation: quaternion_of_axes(l[3], l[4], l[5]),
            velocity: l[1],
            angular_velocity: l[2],
            class: 0,
        });
    }
    Ok(blocks)
}

fn line(out: &mut String, v: [f64; 3]) {
    let _ = writeln!(out, "{:?} {:?} {:?}", v[0], v[1], v[2]);
}

/// The text of `size_N.data` and `position_N.data` for `blocks`.
pub fn format(blocks: &[Block]) -> (String, String) {
    let (mut size, mut pos) = (String::new(), String::new());
    for b in blocks {
        line(&mut size, b.size);
        line(&mut pos, b.centre);
        line(&mut pos, b.velocity);
        line(&mut pos, b.angular_velocity);
        let r = b.axes();
        for k in 0..3 {
            line(&mut pos, [r[(0, k)], r[(1, k)], r[(2, k)]]);
        }
    }
    (size, pos)
}

/// Write `size_N.data` and `position_N.data` (N = number of blocks) into `dir`.
pub fn write(dir: &Path, blocks: &[Block]) -> Result<(PathBuf, PathBuf), Error> {
    let (sp, pp) = paths(dir, blocks.len());
    let (size, pos) = format(blocks);
    talus_io::AtomicFile::write_all(&sp, size.as_bytes())?;
    talus_io::AtomicFile::write_all(&pp, pos.as_bytes())?;
    Ok((sp, pp))
}
