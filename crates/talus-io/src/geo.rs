//! GeoParquet 1.1: the `geo` file-metadata entry and WKB encoding of the geometries
//! Talus writes (points, 2D or with Z, and 2D polygons; little-endian ISO WKB).

use crate::Crs;

/// Metadata key of GeoParquet.
pub const GEO_KEY: &str = "geo";

/// The GeoParquet 1.1 `geo` metadata for one WKB geometry column.
/// `bbox` is `[xmin, ymin, xmax, ymax]`, or `[xmin, ymin, zmin, xmax, ymax, zmax]` for
/// geometries with Z.
pub fn geo_metadata(
    column: &str,
    geometry_types: &[&str],
    crs: Option<&Crs>,
    bbox: Option<&[f64]>,
) -> String {
    let mut col = serde_json::json!({
        "encoding": "WKB",
        "geometry_types": geometry_types,
    });
    if let Some(c) = crs {
        // GeoParquet: a missing `crs` means OGC:CRS84, so an unknown CRS is written as null.
        col["crs"] = c.projjson().unwrap_or(serde_json::Value::Null);
    }
    if let Some(b) = bbox.filter(|b| b.iter().all(|v| v.is_finite())) {
        col["bbox"] = serde_json::json!(b);
    }
    serde_json::json!({
        "version": "1.1.0",
        "primary_column": column,
        "columns": { column: col },
    })
    .to_string()
}

/// WKB of a 2D point.
pub fn wkb_point(x: f64, y: f64) -> Vec<u8> {
    let mut out = Vec::with_capacity(21);
    out.push(1u8);
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&x.to_le_bytes());
    out.extend_from_slice(&y.to_le_bytes());
    out
}

/// WKB of a 3D point (ISO WKB `Point Z`, type 1001).
pub fn wkb_point_z(x: f64, y: f64, z: f64) -> Vec<u8> {
    let mut out = Vec::with_capacity(29);
    out.push(1u8);
    out.extend_from_slice(&1001u32.to_le_bytes());
    for v in [x, y, z] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// WKB of a 3D line string (ISO WKB `LineString Z`, type 1002).
pub fn wkb_linestring_z(points: &[[f64; 3]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + 24 * points.len());
    out.push(1u8);
    out.extend_from_slice(&1002u32.to_le_bytes());
    out.extend_from_slice(&(points.len() as u32).to_le_bytes());
    for p in points {
        for v in p {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// WKB of a 2D polygon given as rings (first the exterior, then holes); each ring is
/// closed here if it is not already.
pub fn wkb_polygon(rings: &[Vec<[f64; 2]>]) -> Vec<u8> {
    let mut out = vec![1u8];
    out.extend_from_slice(&3u32.to_le_bytes());
    push_rings(&mut out, rings);
    out
}

/// WKB of a 2D multipolygon.
pub fn wkb_multipolygon(polygons: &[Vec<Vec<[f64; 2]>>]) -> Vec<u8> {
    let mut out = vec![1u8];
    out.extend_from_slice(&6u32.to_le_bytes());
    out.extend_from_slice(&(polygons.len() as u32).to_le_bytes());
    for p in polygons {
        out.extend(wkb_polygon(p));
    }
    out
}

fn push_rings(out: &mut Vec<u8>, rings: &[Vec<[f64; 2]>]) {
    out.extend_from_slice(&(rings.len() as u32).to_le_bytes());
    for r in rings {
        let closed = r.len() > 1 && r.first() != r.last();
        let n = r.len() + usize::from(closed);
        out.extend_from_slice(&(n as u32).to_le_bytes());
        for p in r.iter().chain(closed.then(|| &r[0])) {
            out.extend_from_slice(&p[0].to_le_bytes());
            out.extend_from_slice(&p[1].to_le_bytes());
        }
    }
}

/// Decode a WKB polygon or multipolygon written by [`wkb_polygon`]/[`wkb_multipolygon`]
/// into polygons of rings. Returns `None` for anything else.
pub fn parse_wkb_polygons(wkb: &[u8]) -> Option<Vec<Vec<Vec<[f64; 2]>>>> {
    let mut r = Reader { b: wkb, i: 0 };
    let geom = r.header()?;
    match geom {
        3 => Some(vec![r.rings()?]),
        6 => {
            let n = r.u32()? as usize;
            (0..n).map(|_| if r.header()? == 3 { r.rings() } else { None }).collect()
        }
        _ => None,
    }
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn header(&mut self) -> Option<u32> {
        let le = *self.b.get(self.i)? == 1;
        self.i += 1;
        if !le {
            return None;
        }
        self.u32()
    }
    fn u32(&mut self) -> Option<u32> {
        let v = u32::from_le_bytes(self.b.get(self.i..self.i + 4)?.try_into().ok()?);
        self.i += 4;
        Some(v)
    }
    fn f64(&mut self) -> Option<f64> {
        let v = f64::from_le_bytes(self.b.get(self.i..self.i + 8)?.try_into().ok()?);
        self.i += 8;
        Some(v)
    }
    fn rings(&mut self) -> Option<Vec<Vec<[f64; 2]>>> {
        let n = self.u32()? as usize;
        (0..n)
            .map(|_| {
                let m = self.u32()? as usize;
                (0..m).map(|_| Some([self.f64()?, self.f64()?])).collect()
            })
            .collect()
    }
}

/// Zone outlines (polygons with holes) with a row-banded edge index for fast
/// point-in-polygon queries.
#[derive(Debug, Clone)]
pub struct Outline {
    edges: Vec<[f64; 4]>,
    y0: f64,
    band: f64,
    bands: Vec<Vec<u32>>,
}

impl Outline {
    /// Index the rings of `polygons` (every ring of every polygon; even-odd rule, so holes
    /// are holes) in bands of height `band` (m).
    pub fn new(polygons: &[Vec<Vec<[f64; 2]>>], band: f64) -> Self {
        let mut edges = Vec::new();
        for ring in polygons.iter().flatten() {
            for w in ring.windows(2) {
                edges.push([w[0][0], w[0][1], w[1][0], w[1][1]]);
            }
            if let (Some(f), Some(l)) = (ring.first(), ring.last())
                && f != l
            {
                edges.push([l[0], l[1], f[0], f[1]]);
            }
        }
        let y0 = edges.iter().map(|e| e[1].min(e[3])).fold(f64::INFINITY, f64::min);
        let y1 = edges.iter().map(|e| e[1].max(e[3])).fold(f64::NEG_INFINITY, f64::max);
        let n = if edges.is_empty() { 0 } else { ((y1 - y0) / band).floor() as usize + 1 };
        let mut bands = vec![Vec::new(); n];
        for (i, e) in edges.iter().enumerate() {
            let b0 = ((e[1].min(e[3]) - y0) / band).floor() as usize;
            let b1 = (((e[1].max(e[3]) - y0) / band).floor() as usize).min(n - 1);
            for b in bands.iter_mut().take(b1 + 1).skip(b0) {
                b.push(i as u32);
            }
        }
        Outline { edges, y0, band, bands }
    }

    fn band_of(&self, y: f64) -> Option<usize> {
        let b = ((y - self.y0) / self.band).floor();
        (b >= 0.0 && (b as usize) < self.bands.len()).then_some(b as usize)
    }

    /// Even-odd point-in-polygon; points within `tol` (m) of an edge count as inside.
    pub fn contains(&self, x: f64, y: f64, tol: f64) -> bool {
        let mut inside = false;
        if let Some(b) = self.band_of(y) {
            for &i in &self.bands[b] {
                let [ax, ay, bx, by] = self.edges[i as usize];
                if (ay > y) != (by > y) && x < ax + (y - ay) * (bx - ax) / (by - ay) {
                    inside = !inside;
                }
            }
        }
        if inside || tol <= 0.0 {
            return inside;
        }
        let lo = self.band_of(y - tol).unwrap_or(0);
        let hi = self.band_of(y + tol).unwrap_or(self.bands.len().saturating_sub(1));
        (lo..=hi.min(self.bands.len().saturating_sub(1))).flat_map(|b| &self.bands[b]).any(|&i| {
            let [ax, ay, bx, by] = self.edges[i as usize];
            let (dx, dy) = (bx - ax, by - ay);
            let l2 = dx * dx + dy * dy;
            let t =
                if l2 > 0.0 { (((x - ax) * dx + (y - ay) * dy) / l2).clamp(0.0, 1.0) } else { 0.0 };
            (ax + t * dx - x).powi(2) + (ay + t * dy - y).powi(2) <= tol * tol
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polygon_round_trip() {
        let ring = vec![[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]];
        let wkb = wkb_polygon(std::slice::from_ref(&ring));
        let back = parse_wkb_polygons(&wkb).unwrap();
        assert_eq!(back[0][0].len(), 4);
        assert_eq!(back[0][0][..3], ring[..]);
        let multi = wkb_multipolygon(&[vec![ring.clone()], vec![ring]]);
        assert_eq!(parse_wkb_polygons(&multi).unwrap().len(), 2);
    }

    #[test]
    fn point_is_21_bytes_iso() {
        let p = wkb_point(1.0, 2.0);
        assert_eq!(p.len(), 21);
        assert_eq!(&p[..5], &[1, 1, 0, 0, 0]);
    }

    #[test]
    fn geo_metadata_is_geoparquet_1_1() {
        let m: serde_json::Value = serde_json::from_str(&geo_metadata(
            "geometry",
            &["Polygon"],
            Some(&Crs::from_epsg(32620)),
            None,
        ))
        .unwrap();
        assert_eq!(m["version"], "1.1.0");
        let crs = &m["columns"]["geometry"]["crs"];
        assert_eq!(crs["id"]["code"], 32620);
        // The complete PROJJSON that GeoParquet 1.1 requires (GeoPandas and GDAL refuse
        // the identifying part alone: `Missing "base_crs" key`).
        assert_eq!(crs["type"], "ProjectedCRS");
        assert_eq!(crs["name"], "WGS 84 / UTM zone 20N");
        let datum = &crs["base_crs"]["datum_ensemble"];
        assert_eq!(datum["name"], "World Geodetic System 1984 ensemble");
        assert_eq!(datum["ellipsoid"]["semi_major_axis"]["value"], 6378137.0);
        assert_eq!(crs["conversion"]["method"]["name"], "Transverse Mercator");
        let lon0 = &crs["conversion"]["parameters"][1];
        assert_eq!(lon0["name"], "Longitude of natural origin");
        assert_eq!(lon0["value"], -63.0);
        assert_eq!(crs["coordinate_system"]["axis"].as_array().unwrap().len(), 2);
        let base_axes = &crs["base_crs"]["coordinate_system"]["axis"];
        assert_eq!(base_axes[0]["abbreviation"], "Lat");
        assert_eq!(base_axes[1]["unit"], "degree");
    }

    #[test]
    fn projjson_from_wkt2_or_unknown() {
        let wkt = r#"PROJCRS["RGF93 v1 / Lambert-93",BASEGEOGCRS["RGF93 v1",DATUM["Reseau Geodesique Francais 1993 v1",ELLIPSOID["GRS 1980",6378137,298.257222101,LENGTHUNIT["metre",1]]],PRIMEM["Greenwich",0,ANGLEUNIT["degree",0.0174532925199433]]],CONVERSION["Lambert-93",METHOD["Lambert Conic Conformal (2SP)"],PARAMETER["Latitude of false origin",46.5,ANGLEUNIT["degree",0.0174532925199433]]],CS[Cartesian,2],AXIS["easting (X)",east,LENGTHUNIT["metre",1]],AXIS["northing (Y)",north,LENGTHUNIT["metre",1]]]"#;
        let j = Crs { wkt: Some(wkt.into()), epsg: None }.projjson().unwrap();
        assert_eq!(j["type"], "ProjectedCRS");
        assert_eq!(j["base_crs"]["name"], "RGF93 v1");
        // WKT1 without an EPSG code cannot be converted here: unknown, not wrong.
        let wkt1 = r#"PROJCS["local",GEOGCS["x",DATUM["d",SPHEROID["s",6378137,298.257]]],PROJECTION["Transverse_Mercator"]]"#;
        assert!(Crs::from_wkt(wkt1).projjson().is_none());
    }

    #[test]
    fn point_z_is_29_bytes_iso() {
        let p = wkb_point_z(1.0, 2.0, 3.0);
        assert_eq!(p.len(), 29);
        assert_eq!(&p[..5], &[1, 0xe9, 0x03, 0, 0]);
        assert_eq!(f64::from_le_bytes(p[21..29].try_into().unwrap()), 3.0);
    }
}
