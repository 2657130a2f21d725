//! The output CRS: OGC WKT 1 of WGS 84 / UTM zones, built from the EPSG code (the only
//! family `talus synth` writes, so no projection database is needed).

use crate::Error;

/// WKT 1 (with EPSG authorities) of WGS 84 / UTM zone N (EPSG:326NN) or S (EPSG:327NN).
pub fn utm_wkt(epsg: u32) -> Result<String, Error> {
    let (zone, north) = match epsg {
        32601..=32660 => (epsg - 32600, true),
        32701..=32760 => (epsg - 32700, false),
        _ => return Err(Error::UnknownCrs(epsg)),
    };
    let central_meridian = -183 + 6 * zone as i32;
    let (hemisphere, false_northing) = if north { ("N", 0) } else { ("S", 10_000_000) };
    Ok(format!(
        "PROJCS[\"WGS 84 / UTM zone {zone}{hemisphere}\",GEOGCS[\"WGS 84\",DATUM[\"WGS_1984\",\
SPHEROID[\"WGS 84\",6378137,298.257223563,AUTHORITY[\"EPSG\",\"7030\"]],AUTHORITY[\"EPSG\",\"6326\"]],\
PRIMEM[\"Greenwich\",0,AUTHORITY[\"EPSG\",\"8901\"]],UNIT[\"degree\",0.0174532925199433,AUTHORITY[\"EPSG\",\"9122\"]],\
AUTHORITY[\"EPSG\",\"4326\"]],PROJECTION[\"Transverse_Mercator\"],PARAMETER[\"latitude_of_origin\",0],\
PARAMETER[\"central_meridian\",{central_meridian}],PARAMETER[\"scale_factor\",0.9996],\
PARAMETER[\"false_easting\",500000],PARAMETER[\"false_northing\",{false_northing}],\
UNIT[\"metre\",1,AUTHORITY[\"EPSG\",\"9001\"]],AXIS[\"Easting\",EAST],AXIS[\"Northing\",NORTH],\
AUTHORITY[\"EPSG\",\"{epsg}\"]]"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utm_20n_is_martinique_and_carries_its_code() {
        let w = utm_wkt(32620).unwrap();
        assert!(w.starts_with("PROJCS[\"WGS 84 / UTM zone 20N\""));
        assert!(w.contains("PARAMETER[\"central_meridian\",-63]"));
        assert_eq!(talus_io::Crs::from_wkt(&w).epsg, Some(32620));
        assert!(utm_wkt(32733).unwrap().contains("false_northing\",10000000"));
        assert!(matches!(utm_wkt(4326), Err(Error::UnknownCrs(4326))));
        assert!(matches!(utm_wkt(32661), Err(Error::UnknownCrs(_))));
    }
}
