//! The coordinate reference system as it travels with the data (WKT and/or EPSG).

use serde::{Deserialize, Serialize};

/// A coordinate reference system as it travels with the data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Crs {
    /// OGC WKT (1 or 2), verbatim from the source (e.g. a LAS WKT VLR).
    pub wkt: Option<String>,
    /// EPSG code of the horizontal CRS, when known.
    pub epsg: Option<u32>,
}

impl Crs {
    /// A CRS known by its EPSG code only.
    pub fn from_epsg(code: u32) -> Self {
        Crs { wkt: None, epsg: Some(code) }
    }

    /// A CRS from WKT; the EPSG code is taken from the last top-level `AUTHORITY["EPSG",..]`
    /// or `ID["EPSG",..]` when present.
    pub fn from_wkt(wkt: &str) -> Self {
        let wkt = wkt.trim_end_matches('\0').trim().to_string();
        Crs { epsg: epsg_from_wkt(&wkt), wkt: Some(wkt) }
    }

    /// True when neither WKT nor EPSG code is known.
    pub fn is_unknown(&self) -> bool {
        self.wkt.is_none() && self.epsg.is_none()
    }

    /// Whether two CRS are the same as far as can be told: same EPSG code when both have
    /// one, otherwise identical WKT; an unknown CRS matches only an unknown CRS.
    pub fn same_as(&self, other: &Crs) -> bool {
        match (self.epsg, other.epsg) {
            (Some(a), Some(b)) => a == b,
            _ => self.wkt == other.wkt && self.epsg == other.epsg,
        }
    }

    /// Whether two recorded CRS, either possibly absent, are the same: both absent, or
    /// both present and [`Crs::same_as`].
    pub fn same_recorded(a: &Option<Crs>, b: &Option<Crs>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => a.same_as(b),
            (None, None) => true,
            _ => false,
        }
    }

    /// [`Crs::label`] of a recorded CRS, `an unknown CRS` when absent.
    pub fn label_recorded(c: &Option<Crs>) -> String {
        c.as_ref().map_or_else(|| "an unknown CRS".to_string(), Crs::label)
    }

    /// A short human description (`EPSG:32620`, the WKT's name, or `unknown`).
    pub fn label(&self) -> String {
        if let Some(code) = self.epsg {
            return format!("EPSG:{code}");
        }
        match &self.wkt {
            Some(w) => w.split('"').nth(1).unwrap_or("custom WKT").to_string(),
            None => "unknown".to_string(),
        }
    }

    /// PROJJSON for GeoParquet's `crs` member: the complete definition (base CRS,
    /// conversion, coordinate system), as GeoParquet 1.1, GeoPandas and GDAL require.
    /// From the EPSG code through the EPSG dataset embedded by `epsg-utils` (no PROJ
    /// needed), else converted from a WKT2 definition; `None` when neither applies (no
    /// code and no WKT2: GeoParquet readers then see an unknown CRS rather than a wrong
    /// one).
    pub fn projjson(&self) -> Option<serde_json::Value> {
        let json = match self.epsg.and_then(epsg_projjson) {
            Some(j) => j,
            None => epsg_utils::parse_wkt2(self.wkt.as_deref()?).ok()?.to_projjson(),
        };
        Some(with_base_coordinate_system(json))
    }
}

fn epsg_projjson(code: u32) -> Option<serde_json::Value> {
    serde_json::from_str(epsg_utils::epsg_to_projjson(i32::try_from(code).ok()?).ok()?).ok()
}

/// PROJ (hence GeoPandas and GDAL) requires the base CRS of a projected CRS to state its
/// coordinate system, which the embedded definitions leave out: take it from the base
/// CRS's own EPSG definition, or the geodetic latitude/longitude in degrees of nearly
/// every EPSG geographic CRS.
fn with_base_coordinate_system(mut json: serde_json::Value) -> serde_json::Value {
    let Some(base) = json.get_mut("base_crs").and_then(|b| b.as_object_mut()) else {
        return json;
    };
    if base.contains_key("coordinate_system") {
        return json;
    }
    let own = base
        .get("id")
        .and_then(|id| id.get("code"))
        .and_then(|c| c.as_u64())
        .and_then(|c| epsg_projjson(u32::try_from(c).ok()?))
        .and_then(|g| g.get("coordinate_system").cloned());
    let cs = own.unwrap_or_else(|| {
        serde_json::json!({
            "subtype": "ellipsoidal",
            "axis": [
                {"name": "Geodetic latitude", "abbreviation": "Lat", "direction": "north", "unit": "degree"},
                {"name": "Geodetic longitude", "abbreviation": "Lon", "direction": "east", "unit": "degree"}
            ]
        })
    });
    base.insert("coordinate_system".into(), cs);
    json
}

fn epsg_from_wkt(wkt: &str) -> Option<u32> {
    // The CRS's own authority is the last AUTHORITY/ID at nesting depth 1.
    let mut depth = 0i32;
    let mut found = None;
    for (i, ch) in wkt.char_indices() {
        match ch {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            _ if depth == 1 => {
                for key in ["AUTHORITY[\"EPSG\",", "ID[\"EPSG\","] {
                    if let Some(rest) = wkt[i..].strip_prefix(key) {
                        let digits: String = rest
                            .chars()
                            .skip_while(|c| *c == '"' || c.is_whitespace())
                            .take_while(|c| c.is_ascii_digit())
                            .collect();
                        if let Ok(code) = digits.parse() {
                            found = Some(code);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    found
}
