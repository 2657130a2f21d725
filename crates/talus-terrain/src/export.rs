//! Writing a TIN: vertices and triangles Parquet (schemas in `talus_schema::terrain`),
//! binary PLY and optionally Wavefront OBJ.

use crate::tin::Tin;
use std::io::Write;
use std::path::Path;
use talus_io::tin::Facet;
use talus_io::{AtomicFile, IoError, Provenance};
use talus_schema::file_names::terrain as names;

/// The facet (upward normal, 3D area, slope) of every triangle, as the triangles table
/// stores them.
pub fn facets(tin: &Tin) -> Vec<Facet> {
    (0..tin.triangles.len())
        .map(|t| {
            let (normal, area, slope) = tin.facet(t);
            Facet { normal, area, slope }
        })
        .collect()
}

fn os(path: &Path) -> impl FnOnce(std::io::Error) -> IoError + '_ {
    move |source| IoError::Os { path: path.to_path_buf(), source }
}

/// Binary little-endian PLY: double vertices, `uint` index lists.
pub fn write_ply(tin: &Tin, path: &Path) -> Result<(), IoError> {
    let mut f = AtomicFile::create(path)?;
    let header = format!(
        "ply\nformat binary_little_endian 1.0\ncomment talus terrain TIN\nelement vertex {}\nproperty double x\nproperty double y\nproperty double z\nelement face {}\nproperty list uchar uint vertex_indices\nend_header\n",
        tin.vertices.len(),
        tin.triangles.len()
    );
    f.write_all(header.as_bytes()).map_err(os(path))?;
    for p in &tin.vertices {
        for v in p {
            f.write_all(&v.to_le_bytes()).map_err(os(path))?;
        }
    }
    for t in &tin.triangles {
        f.write_all(&[3u8]).map_err(os(path))?;
        for v in t {
            f.write_all(&v.to_le_bytes()).map_err(os(path))?;
        }
    }
    f.commit()
}

/// Wavefront OBJ (1-based indices).
pub fn write_obj(tin: &Tin, path: &Path) -> Result<(), IoError> {
    let mut f = AtomicFile::create(path)?;
    writeln!(f, "# talus terrain TIN").map_err(os(path))?;
    for p in &tin.vertices {
        writeln!(f, "v {} {} {}", p[0], p[1], p[2]).map_err(os(path))?;
    }
    for t in &tin.triangles {
        writeln!(f, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1).map_err(os(path))?;
    }
    f.commit()
}

/// Write every output of the stage into `dir`; returns the 3D area.
pub fn write_all(tin: &Tin, dir: &Path, prov: &Provenance, obj: bool) -> Result<f64, IoError> {
    let facets = facets(tin);
    let area = facets.iter().map(|f| f.area).sum();
    talus_io::tin::write(dir, &tin.vertices, &tin.triangles, &facets, prov)?;
    write_ply(tin, &dir.join(names::PLY))?;
    if obj {
        write_obj(tin, &dir.join("terrain.obj"))?;
    }
    Ok(area)
}

/// Read a TIN back from `dir/vertices.parquet` and `dir/triangles.parquet`
/// ([`talus_io::tin::read`]; adjacency rebuilt from shared edges).
pub fn read_tin(dir: &Path) -> Result<Tin, IoError> {
    let t = talus_io::tin::read(dir)?;
    let neighbours = crate::tin::adjacency(&t.triangles);
    Ok(Tin { vertices: t.vertices, triangles: t.triangles, neighbours })
}
