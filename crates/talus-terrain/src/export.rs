//! Writing a TIN: vertices and triangles Parquet (schemas in `talus_schema::terrain`),
//! binary PLY and optionally Wavefront OBJ.

use crate::tin::Tin;
use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt32Array};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use talus_io::{AtomicFile, IoError, Provenance};
use talus_schema::file_names::terrain as names;

/// Vertices as a record batch.
pub fn vertices_batch(tin: &Tin) -> RecordBatch {
    let v = &tin.vertices;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(0..v.len() as u32)),
        Arc::new(Float64Array::from_iter_values(v.iter().map(|p| p[0]))),
        Arc::new(Float64Array::from_iter_values(v.iter().map(|p| p[1]))),
        Arc::new(Float64Array::from_iter_values(v.iter().map(|p| p[2]))),
    ];
    RecordBatch::try_new(Arc::new(talus_schema::terrain::vertices_schema()), cols)
        .expect("vertices schema")
}

/// Triangles (with normal, area, slope) as a record batch, and the total 3D area.
pub fn triangles_batch(tin: &Tin) -> (RecordBatch, f64) {
    let n = tin.triangles.len();
    let (mut nx, mut ny, mut nz, mut area, mut slope) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for t in 0..n {
        let (u, a, s) = tin.facet(t);
        nx.push(u[0]);
        ny.push(u[1]);
        nz.push(u[2]);
        area.push(a);
        slope.push(s);
    }
    let total = area.iter().sum();
    let tri = &tin.triangles;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(0..n as u32)),
        Arc::new(UInt32Array::from_iter_values(tri.iter().map(|t| t[0]))),
        Arc::new(UInt32Array::from_iter_values(tri.iter().map(|t| t[1]))),
        Arc::new(UInt32Array::from_iter_values(tri.iter().map(|t| t[2]))),
        Arc::new(Float64Array::from(nx)),
        Arc::new(Float64Array::from(ny)),
        Arc::new(Float64Array::from(nz)),
        Arc::new(Float64Array::from(area)),
        Arc::new(Float64Array::from(slope)),
    ];
    let b = RecordBatch::try_new(Arc::new(talus_schema::terrain::triangles_schema()), cols)
        .expect("triangles schema");
    (b, total)
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
    let vb = vertices_batch(tin);
    let (tb, area) = triangles_batch(tin);
    talus_io::write_parquet(&dir.join(names::VERTICES), vb.schema(), &[vb], prov)?;
    talus_io::write_parquet(&dir.join(names::TRIANGLES), tb.schema(), &[tb], prov)?;
    write_ply(tin, &dir.join(names::PLY))?;
    if obj {
        write_obj(tin, &dir.join("terrain.obj"))?;
    }
    Ok(area)
}

/// Read a TIN back from `dir/vertices.parquet` and `dir/triangles.parquet` (adjacency
/// rebuilt from shared edges).
pub fn read_tin(dir: &Path) -> Result<Tin, IoError> {
    let v = talus_io::read_table(
        &dir.join(names::VERTICES),
        &talus_schema::terrain::vertices_schema(),
    )?;
    let t = talus_io::read_table(
        &dir.join(names::TRIANGLES),
        &talus_schema::terrain::triangles_schema(),
    )?;
    let (x, y, z) = (v.f64s("x")?, v.f64s("y")?, v.f64s("z")?);
    let vertices: Vec<[f64; 3]> = (0..x.len()).map(|i| [x[i], y[i], z[i]]).collect();
    let (a, b, c) = (t.u32s("v0")?, t.u32s("v1")?, t.u32s("v2")?);
    let triangles: Vec<[u32; 3]> = (0..a.len()).map(|i| [a[i], b[i], c[i]]).collect();
    let neighbours = crate::tin::adjacency(&triangles);
    Ok(Tin { vertices, triangles, neighbours })
}
