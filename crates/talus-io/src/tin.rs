//! The TIN tables of a terrain directory (`vertices.parquet`, `triangles.parquet`,
//! schemas in `talus_schema::terrain`): their one reader and one writer. `talus terrain`
//! writes them; `talus seed`, `talus run` and `talus compare` read them and build their own
//! structures (adjacency, collider grid, figures) from the plain tables.

use crate::error::{IoError, Result};
use crate::{Provenance, read_table, write_parquet};
use arrow::array::{ArrayRef, Float64Array, RecordBatch, UInt32Array};
use std::path::Path;
use std::sync::Arc;
use talus_schema::file_names::terrain as names;

/// A TIN as stored: vertices (x, y, z), m, and triangles as vertex indices,
/// counter-clockwise seen from above.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TinTables {
    pub vertices: Vec<[f64; 3]>,
    pub triangles: Vec<[u32; 3]>,
}

/// What the triangles table stores per triangle besides its vertices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Facet {
    /// Upward unit normal.
    pub normal: [f64; 3],
    /// 3D area, m².
    pub area: f64,
    /// Slope, degrees.
    pub slope: f64,
}

/// The vertices as a record batch (ids 0..n).
pub fn vertices_batch(vertices: &[[f64; 3]]) -> RecordBatch {
    let c = |k: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(vertices.iter().map(|p| p[k])))
    };
    let cols: Vec<ArrayRef> =
        vec![Arc::new(UInt32Array::from_iter_values(0..vertices.len() as u32)), c(0), c(1), c(2)];
    RecordBatch::try_new(Arc::new(talus_schema::terrain::vertices_schema()), cols)
        .expect("vertices schema")
}

/// The triangles with their facets as a record batch (ids 0..n).
pub fn triangles_batch(triangles: &[[u32; 3]], facets: &[Facet]) -> RecordBatch {
    assert_eq!(triangles.len(), facets.len(), "one facet per triangle");
    let v = |k: usize| -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(triangles.iter().map(|t| t[k])))
    };
    let f = |g: &dyn Fn(&Facet) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(facets.iter().map(g)))
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from_iter_values(0..triangles.len() as u32)),
        v(0),
        v(1),
        v(2),
        f(&|t| t.normal[0]),
        f(&|t| t.normal[1]),
        f(&|t| t.normal[2]),
        f(&|t| t.area),
        f(&|t| t.slope),
    ];
    RecordBatch::try_new(Arc::new(talus_schema::terrain::triangles_schema()), cols)
        .expect("triangles schema")
}

/// Write `dir/vertices.parquet` and `dir/triangles.parquet` (each atomically).
pub fn write(
    dir: &Path,
    vertices: &[[f64; 3]],
    triangles: &[[u32; 3]],
    facets: &[Facet],
    prov: &Provenance,
) -> Result<()> {
    let vb = vertices_batch(vertices);
    let tb = triangles_batch(triangles, facets);
    write_parquet(&dir.join(names::VERTICES), vb.schema(), &[vb], prov)?;
    write_parquet(&dir.join(names::TRIANGLES), tb.schema(), &[tb], prov)
}

/// Read the TIN of a terrain directory, checked: vertex ids are 0..n each once (rows in
/// any order), coordinates finite, at least one triangle, every triangle index below n.
/// Errors name the file and the row.
pub fn read(dir: &Path) -> Result<TinTables> {
    let (vp, tp) = (dir.join(names::VERTICES), dir.join(names::TRIANGLES));
    let v = read_table(&vp, &talus_schema::terrain::vertices_schema())?;
    let t = read_table(&tp, &talus_schema::terrain::triangles_schema())?;
    let invalid =
        |path: &Path, message: String| IoError::Invalid { path: path.to_path_buf(), message };
    let (id, x, y, z) = (v.u32s("id")?, v.f64s("x")?, v.f64s("y")?, v.f64s("z")?);
    let n = id.len();
    let mut vertices = vec![[f64::NAN; 3]; n];
    let mut seen = vec![false; n];
    for k in 0..n {
        let i = id[k] as usize;
        if i >= n || seen[i] {
            return Err(invalid(
                &vp,
                format!("row {k}: vertex id {i} repeated or out of 0..{n} (ids must be dense)"),
            ));
        }
        let p = [x[k], y[k], z[k]];
        if !p.iter().all(|c| c.is_finite()) {
            return Err(invalid(&vp, format!("row {k}: vertex {i} at {p:?} is not finite")));
        }
        seen[i] = true;
        vertices[i] = p;
    }
    let (v0, v1, v2) = (t.u32s("v0")?, t.u32s("v1")?, t.u32s("v2")?);
    if v0.is_empty() {
        return Err(invalid(&tp, "the terrain has no triangles".into()));
    }
    let triangles: Vec<[u32; 3]> = (0..v0.len()).map(|k| [v0[k], v1[k], v2[k]]).collect();
    if let Some(k) = triangles.iter().position(|t| t.iter().any(|&i| i as usize >= n)) {
        return Err(invalid(
            &tp,
            format!(
                "row {k}: triangle {:?} refers to a vertex beyond the {n} vertices",
                triangles[k]
            ),
        ));
    }
    Ok(TinTables { vertices, triangles })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> (TinTables, Vec<Facet>) {
        let tin = TinTables {
            vertices: vec![[0.0, 0.0, 1.0], [2.0, 0.0, 1.5], [2.0, 2.0, 2.0], [0.0, 2.0, 1.25]],
            triangles: vec![[0, 1, 2], [0, 2, 3]],
        };
        let f = Facet { normal: [0.0, 0.0, 1.0], area: 2.0, slope: 0.0 };
        (tin, vec![f, f])
    }

    #[test]
    fn round_trip_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let (tin, facets) = square();
        write(
            dir.path(),
            &tin.vertices,
            &tin.triangles,
            &facets,
            &Provenance::new("terrain", "test", &0),
        )
        .unwrap();
        assert_eq!(read(dir.path()).unwrap(), tin);
    }

    #[test]
    fn bad_tables_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let prov = Provenance::new("terrain", "test", &0);
        let (mut tin, facets) = square();
        tin.triangles[1] = [0, 2, 4];
        write(dir.path(), &tin.vertices, &tin.triangles, &facets, &prov).unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("triangles.parquet")
                && e.contains("row 1")
                && e.contains("beyond the 4 vertices"),
            "{e}"
        );
        let (mut tin, facets) = square();
        tin.vertices[2][2] = f64::NAN;
        write(dir.path(), &tin.vertices, &tin.triangles, &facets, &prov).unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("vertices.parquet") && e.contains("vertex 2") && e.contains("not finite"),
            "{e}"
        );
        write(dir.path(), &square().0.vertices, &[], &[], &prov).unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("no triangles"), "{e}");
    }
}
