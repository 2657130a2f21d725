//! GeoTIFF rasters: one band of 32-bit floats on a north-up grid, with the CRS as its
//! EPSG code, NaN as no data (GDAL's `GDAL_NODATA` tag) and deflate compression, so that
//! GDAL, rasterio and QGIS open them with their georeferencing.
//!
//! The GeoTIFF keys written (OGC GeoTIFF 1.1): `GTModelTypeGeoKey` (projected or
//! geographic), `GTRasterTypeGeoKey` = PixelIsArea, and `ProjectedCSTypeGeoKey` or
//! `GeographicTypeGeoKey` with the EPSG code; the grid is placed by
//! `ModelPixelScaleTag` and `ModelTiepointTag` (the north-west corner of the first pixel).

use crate::error::{IoError, Result};
use crate::{AtomicFile, Crs};
use std::path::Path;
use tiff::encoder::{Compression, DeflateLevel, TiffEncoder, colortype::Gray32Float};
use tiff::tags::Tag;

const MODEL_PIXEL_SCALE: u16 = 33550;
const MODEL_TIEPOINT: u16 = 33922;
const GEO_KEY_DIRECTORY: u16 = 34735;
const GDAL_NODATA: u16 = 42113;

/// A north-up grid: `nx` × `ny` square cells of side `cell` whose south-west corner is
/// (`x0`, `y0`); cell (row r, column c) is value `r * nx + c`, row 0 the southernmost (the
/// layout of Talus's grid tables).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GridSpec {
    pub x0: f64,
    pub y0: f64,
    pub cell: f64,
    pub nx: usize,
    pub ny: usize,
}

/// Write `values` (one per cell, south row first; NaN = no data) as a GeoTIFF at `path`,
/// atomically. An EPSG code of 4000–4999 is written as a geographic CRS, any other as a
/// projected one; without a code the raster has no CRS (and GDAL says so).
pub fn write(path: &Path, grid: &GridSpec, values: &[f64], crs: Option<&Crs>) -> Result<()> {
    let invalid = |message: String| IoError::Invalid { path: path.to_path_buf(), message };
    if values.len() != grid.nx * grid.ny || grid.nx == 0 || grid.ny == 0 {
        return Err(invalid(format!(
            "{} values for a {} x {} grid",
            values.len(),
            grid.nx,
            grid.ny
        )));
    }
    let (w, h) = (u32::try_from(grid.nx), u32::try_from(grid.ny));
    let (Ok(w), Ok(h)) = (w, h) else { return Err(invalid("grid too large for TIFF".into())) };
    // TIFF rows run north to south.
    let mut data = Vec::with_capacity(values.len());
    for r in (0..grid.ny).rev() {
        data.extend(values[r * grid.nx..(r + 1) * grid.nx].iter().map(|v| *v as f32));
    }
    let tiff_err = |e: tiff::TiffError| invalid(format!("writing GeoTIFF: {e}"));
    let mut bytes = std::io::Cursor::new(Vec::new());
    {
        let mut enc = TiffEncoder::new(&mut bytes)
            .map_err(tiff_err)?
            .with_compression(Compression::Deflate(DeflateLevel::Balanced));
        let mut img = enc.new_image::<Gray32Float>(w, h).map_err(tiff_err)?;
        let d = img.encoder();
        d.write_tag(Tag::Unknown(MODEL_PIXEL_SCALE), &[grid.cell, grid.cell, 0.0][..])
            .map_err(tiff_err)?;
        let north = grid.y0 + grid.ny as f64 * grid.cell;
        d.write_tag(Tag::Unknown(MODEL_TIEPOINT), &[0.0, 0.0, 0.0, grid.x0, north, 0.0][..])
            .map_err(tiff_err)?;
        d.write_tag(Tag::Unknown(GEO_KEY_DIRECTORY), &geo_keys(crs.and_then(|c| c.epsg))[..])
            .map_err(tiff_err)?;
        d.write_tag(Tag::Unknown(GDAL_NODATA), "nan").map_err(tiff_err)?;
        img.write_data(&data).map_err(tiff_err)?;
    }
    AtomicFile::write_all(path, bytes.get_ref())
}

/// Read a raster written by [`write`] (one band of 32-bit floats, north-up, placed by
/// `ModelPixelScaleTag` and `ModelTiepointTag`): its grid and its values, south row first.
pub fn read(path: &Path) -> Result<(GridSpec, Vec<f64>)> {
    let invalid = |message: String| IoError::Invalid { path: path.to_path_buf(), message };
    let tiff_err = |e: tiff::TiffError| invalid(format!("reading GeoTIFF: {e}"));
    let file =
        std::fs::File::open(path).map_err(|e| invalid(format!("cannot open the raster: {e}")))?;
    let mut dec = tiff::decoder::Decoder::new(std::io::BufReader::new(file)).map_err(tiff_err)?;
    let (w, h) = dec.dimensions().map_err(tiff_err)?;
    let scale = dec.get_tag_f64_vec(Tag::Unknown(MODEL_PIXEL_SCALE)).map_err(tiff_err)?;
    let tie = dec.get_tag_f64_vec(Tag::Unknown(MODEL_TIEPOINT)).map_err(tiff_err)?;
    if scale.len() < 2 || tie.len() < 6 || scale[0] != scale[1] || tie[0] != 0.0 || tie[1] != 0.0 {
        return Err(invalid(format!(
            "not a north-up raster of square cells (pixel scale {scale:?}, tie point {tie:?})"
        )));
    }
    let (nx, ny) = (w as usize, h as usize);
    let grid = GridSpec { x0: tie[3], y0: tie[4] - ny as f64 * scale[0], cell: scale[0], nx, ny };
    let tiff::decoder::DecodingResult::F32(px) = dec.read_image().map_err(tiff_err)? else {
        return Err(invalid("the band is not 32-bit floats".into()));
    };
    if px.len() != nx * ny {
        return Err(invalid(format!("{} pixels for a {nx} x {ny} raster", px.len())));
    }
    let mut values = Vec::with_capacity(px.len());
    for r in (0..ny).rev() {
        values.extend(px[r * nx..(r + 1) * nx].iter().map(|v| f64::from(*v)));
    }
    Ok((grid, values))
}

/// The GeoKeyDirectory: header (version 1.1.0, key count) and one entry per key
/// (id, location 0 = value in place, count 1, value).
fn geo_keys(epsg: Option<u32>) -> Vec<u16> {
    let mut keys: Vec<[u16; 4]> = vec![[1025, 0, 1, 1]]; // GTRasterTypeGeoKey: PixelIsArea
    if let Some(code) = epsg.and_then(|c| u16::try_from(c).ok()) {
        if (4000..5000).contains(&code) {
            keys.push([1024, 0, 1, 2]); // GTModelTypeGeoKey: geographic
            keys.push([2048, 0, 1, code]); // GeographicTypeGeoKey
        } else {
            keys.push([1024, 0, 1, 1]); // GTModelTypeGeoKey: projected
            keys.push([3072, 0, 1, code]); // ProjectedCSTypeGeoKey
        }
    }
    keys.sort_unstable();
    let mut v = vec![1, 1, 0, keys.len() as u16];
    v.extend(keys.into_iter().flatten());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geo_keys_are_sorted_with_their_header() {
        assert_eq!(
            geo_keys(Some(32620)),
            vec![1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32620]
        );
        assert_eq!(geo_keys(Some(4326))[4..8], [1024, 0, 1, 2]);
        assert_eq!(geo_keys(None), vec![1, 1, 0, 1, 1025, 0, 1, 1]);
    }

    #[test]
    fn written_raster_reads_back_north_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.tif");
        let g = GridSpec { x0: 1000.0, y0: 2000.0, cell: 2.0, nx: 3, ny: 2 };
        // Row 0 (south): 0 1 2; row 1 (north): 3 NaN 5.
        let v = [0.0, 1.0, 2.0, 3.0, f64::NAN, 5.0];
        write(&path, &g, &v, Some(&Crs::from_epsg(32620))).unwrap();
        let mut dec = tiff::decoder::Decoder::new(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(dec.dimensions().unwrap(), (3, 2));
        let tie = dec.get_tag_f64_vec(Tag::Unknown(MODEL_TIEPOINT)).unwrap();
        assert_eq!(tie, vec![0.0, 0.0, 0.0, 1000.0, 2004.0, 0.0]);
        let keys = dec.get_tag_u16_vec(Tag::Unknown(GEO_KEY_DIRECTORY)).unwrap();
        assert_eq!(keys[keys.len() - 1], 32620);
        let tiff::decoder::DecodingResult::F32(px) = dec.read_image().unwrap() else {
            panic!("not f32")
        };
        assert_eq!((px[0], px[2]), (3.0, 5.0));
        assert!(px[1].is_nan());
        assert_eq!(&px[3..], &[0.0, 1.0, 2.0]);
        assert!(write(&path, &g, &v[..5], None).is_err());
        // And back through the reader: the same grid, the same values, south row first.
        let (g2, v2) = read(&path).unwrap();
        assert_eq!(g2, g);
        assert_eq!((v2[0], v2[1], v2[2], v2[3], v2[5]), (0.0, 1.0, 2.0, 3.0, 5.0));
        assert!(v2[4].is_nan());
        std::fs::write(&path, b"not a tiff").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("r.tif"), "{e}");
    }
}
