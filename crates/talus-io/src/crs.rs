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

    /// PROJJSON for GeoParquet's `crs` member. Without PROJ at hand Talus writes the
    /// identifying part of PROJJSON (`type`, `name`, `id`), which GDAL and GeoPandas
    /// resolve through the EPSG registry; `None` when no EPSG code is known.
    pub fn projjson(&self) -> Option<serde_json::Value> {
        let code = self.epsg?;
        let name = self
            .wkt
            .as_deref()
            .and_then(|w| w.split('"').nth(1))
            .map(str::to_string)
            .unwrap_or_else(|| format!("EPSG:{code}"));
        let kind = match &self.wkt {
            Some(w) if w.starts_with("GEOGCS") || w.starts_with("GEOGCRS") => "GeographicCRS",
            _ => "ProjectedCRS",
        };
        Some(serde_json::json!({
            "$schema": "https://proj.org/schemas/v0.7/projjson.schema.json",
            "type": kind,
            "name": name,
            "id": {"authority": "EPSG", "code": code}
        }))
    }
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
