//! VTK XML unstructured grids (`.vtu`) and their time series (`.pvd` collections), as
//! ParaView, VisIt, the `vtk` and `meshio` Python packages read them.
//!
//! One writer: [`write_vtu`] writes a grid with its arrays in the file's appended section
//! (raw little-endian binary, each array preceded by its byte count as a UInt64, as the
//! VTK XML format defines with `header_type="UInt64"`); coordinates are Float64, so CRS
//! coordinates (UTM eastings and northings in the millions) keep their millimetres.
//! [`write_pvd`] writes the collection that plays the files back as a time series.
//! Both write atomically.

use crate::{AtomicFile, Result};
use std::fmt::Write as _;
use std::path::Path;

/// VTK cell type of a triangle.
pub const VTK_TRIANGLE: u8 = 5;
/// VTK cell type of a hexahedron (vertices: the bottom face counter-clockwise seen from
/// above, then the top face in the same order).
pub const VTK_HEXAHEDRON: u8 = 12;

/// Values of a point or cell array.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Float64 values, `components` per tuple.
    F64 { components: usize, values: Vec<f64> },
    /// UInt32 values, one per tuple.
    U32(Vec<u32>),
}

impl Values {
    fn type_name(&self) -> &'static str {
        match self {
            Values::F64 { .. } => "Float64",
            Values::U32(_) => "UInt32",
        }
    }

    fn components(&self) -> usize {
        match self {
            Values::F64 { components, .. } => *components,
            Values::U32(_) => 1,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        match self {
            Values::F64 { values, .. } => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Values::U32(v) => v.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }
}

/// A named array with its unit (written as the array's `Name`, e.g. `speed_m_s`, and in
/// a comment of the file).
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    pub name: String,
    pub values: Values,
}

/// An unstructured grid of one cell type.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Grid {
    pub points: Vec<[f64; 3]>,
    /// Vertex indices of each cell, `vertices_per_cell` at a time.
    pub connectivity: Vec<u32>,
    pub vertices_per_cell: usize,
    pub cell_type: u8,
    pub point_data: Vec<Array>,
    pub cell_data: Vec<Array>,
}

impl Grid {
    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.connectivity.len().checked_div(self.vertices_per_cell).unwrap_or(0)
    }
}

/// Write `grid` to `path` as a VTK XML unstructured grid (appended raw binary).
pub fn write_vtu(path: &Path, grid: &Grid) -> Result<()> {
    let n_cells = grid.cells();
    let mut blobs: Vec<Vec<u8>> = Vec::new();
    let mut xml = String::new();
    let mut offset = 0usize;
    let mut array = |xml: &mut String, ty: &str, name: &str, comps: usize, bytes: Vec<u8>| {
        let name_attr = if name.is_empty() { String::new() } else { format!(" Name=\"{name}\"") };
        let _ = writeln!(
            xml,
            "        <DataArray type=\"{ty}\"{name_attr} NumberOfComponents=\"{comps}\" format=\"appended\" offset=\"{offset}\"/>"
        );
        offset += 8 + bytes.len();
        blobs.push(bytes);
    };
    xml.push_str("<?xml version=\"1.0\"?>\n");
    xml.push_str("<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n");
    xml.push_str("  <UnstructuredGrid>\n");
    let _ = writeln!(
        xml,
        "    <Piece NumberOfPoints=\"{}\" NumberOfCells=\"{n_cells}\">",
        grid.points.len()
    );
    xml.push_str("      <Points>\n");
    let pts: Vec<u8> = grid.points.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
    array(&mut xml, "Float64", "Points", 3, pts);
    xml.push_str("      </Points>\n      <Cells>\n");
    let conn: Vec<u8> =
        grid.connectivity.iter().flat_map(|&v| i64::from(v).to_le_bytes()).collect();
    array(&mut xml, "Int64", "connectivity", 1, conn);
    let offsets: Vec<u8> =
        (1..=n_cells).flat_map(|k| ((k * grid.vertices_per_cell) as i64).to_le_bytes()).collect();
    array(&mut xml, "Int64", "offsets", 1, offsets);
    array(&mut xml, "UInt8", "types", 1, vec![grid.cell_type; n_cells]);
    xml.push_str("      </Cells>\n");
    for (tag, arrays) in [("PointData", &grid.point_data), ("CellData", &grid.cell_data)] {
        if arrays.is_empty() {
            continue;
        }
        let _ = writeln!(xml, "      <{tag}>");
        for a in arrays {
            array(&mut xml, a.values.type_name(), &a.name, a.values.components(), a.values.bytes());
        }
        let _ = writeln!(xml, "      </{tag}>");
    }
    xml.push_str("    </Piece>\n  </UnstructuredGrid>\n  <AppendedData encoding=\"raw\">\n   _");
    let mut bytes = xml.into_bytes();
    for b in &blobs {
        bytes.extend_from_slice(&(b.len() as u64).to_le_bytes());
        bytes.extend_from_slice(b);
    }
    bytes.extend_from_slice(b"\n  </AppendedData>\n</VTKFile>\n");
    AtomicFile::write_all(path, &bytes)
}

/// Write a ParaView collection of `(time, file)` datasets (file names relative to the
/// collection's directory).
pub fn write_pvd(path: &Path, datasets: &[(f64, String)]) -> Result<()> {
    let mut xml = String::from(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"1.0\" byte_order=\"LittleEndian\">\n  <Collection>\n",
    );
    for (t, file) in datasets {
        let _ =
            writeln!(xml, "    <DataSet timestep=\"{t}\" group=\"\" part=\"0\" file=\"{file}\"/>");
    }
    xml.push_str("  </Collection>\n</VTKFile>\n");
    AtomicFile::write_all(path, xml.as_bytes())
}

/// The 8 corners of a box (centre `c`, rotation `r` from body to world, half extents
/// `h`) in VTK hexahedron order.
pub fn box_corners(c: [f64; 3], r: [[f64; 3]; 3], h: [f64; 3]) -> [[f64; 3]; 8] {
    const SIGNS: [[f64; 3]; 8] = [
        [-1.0, -1.0, -1.0],
        [1.0, -1.0, -1.0],
        [1.0, 1.0, -1.0],
        [-1.0, 1.0, -1.0],
        [-1.0, -1.0, 1.0],
        [1.0, -1.0, 1.0],
        [1.0, 1.0, 1.0],
        [-1.0, 1.0, 1.0],
    ];
    SIGNS.map(|s| {
        let d = [s[0] * h[0], s[1] * h[1], s[2] * h[2]];
        [0, 1, 2].map(|i| c[i] + r[i][0] * d[0] + r[i][1] * d[1] + r[i][2] * d[2])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_cube_is_written_with_its_arrays() {
        let d = tempfile::tempdir().unwrap();
        let id = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let corners = box_corners([697_000.5, 1_636_000.25, 10.0], id, [0.5, 0.5, 0.5]);
        let grid = Grid {
            points: corners.to_vec(),
            connectivity: (0..8).collect(),
            vertices_per_cell: 8,
            cell_type: VTK_HEXAHEDRON,
            point_data: vec![],
            cell_data: vec![Array { name: "id".into(), values: Values::U32(vec![7]) }],
        };
        let p = d.path().join("cube.vtu");
        write_vtu(&p, &grid).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("NumberOfPoints=\"8\" NumberOfCells=\"1\""));
        // The appended section starts after '_': the points' byte count, then the points.
        let tag = b"<AppendedData encoding=\"raw\">";
        let at = bytes.windows(tag.len()).position(|w| w == tag).unwrap() + tag.len();
        let start = at + bytes[at..].iter().position(|&b| b == b'_').unwrap() + 1;
        let n = u64::from_le_bytes(bytes[start..start + 8].try_into().unwrap());
        assert_eq!(n, 8 * 3 * 8);
        let x0 = f64::from_le_bytes(bytes[start + 8..start + 16].try_into().unwrap());
        assert_eq!(x0, 697_000.0);
        write_pvd(&d.path().join("s.pvd"), &[(0.0, "cube.vtu".into()), (0.5, "cube.vtu".into())])
            .unwrap();
        let pvd = std::fs::read_to_string(d.path().join("s.pvd")).unwrap();
        assert!(pvd.contains("timestep=\"0.5\"") && pvd.contains("file=\"cube.vtu\""));
    }

    #[test]
    fn box_corners_follow_the_rotation() {
        // 90° about z: body x goes to world y.
        let r = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];
        let c = box_corners([0.0; 3], r, [2.0, 1.0, 0.5]);
        assert_eq!(c[1], [1.0, 2.0, -0.5]);
        assert_eq!(c[6], [-1.0, 2.0, 0.5]);
    }
}
