//! Tables written by `talus diff`: the DEM of difference grid and the change zones
//! (read by `seed` and `compare`); C2C and M3C2 distance tables are declared here too.
//!
//! Grid geometry (origin, cell size, shape) is also stored as JSON under the file
//! metadata key [`GRID_KEY`]: `{"x0":..,"y0":..,"cell":..,"nx":..,"ny":..}` where
//! (x0, y0) is the lower-left corner of cell (row 0, col 0) and rows grow northward.
//! Empty cells hold NaN elevations. When the post-event survey was co-registered, every
//! table of the stage carries the transform under [`REGISTRATION_KEY`] (JSON: `status`,
//! `centre`, `translation`, `rotation_deg`, `rotation`, `matrix` (4 × 4, row major, on
//! CRS coordinates), `rms_before`, `rms`, `points_sampled`, `points_used`, `iterations`,
//! `rounds`, `cells_excluded`).

use crate::field;
use arrow::datatypes::{DataType, Schema};

/// File-metadata key of the grid geometry JSON.
pub const GRID_KEY: &str = "talus:grid";

/// File-metadata key of the co-registration applied to the post-event survey (JSON).
pub const REGISTRATION_KEY: &str = "talus:registration";

/// DEM of difference: one row per grid cell.
pub fn dod_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("row", DataType::UInt32, false, "1", "grid row (0 = southernmost)"),
        field("col", DataType::UInt32, false, "1", "grid column (0 = westernmost)"),
        f("x", "m", "cell centre, easting"),
        f("y", "m", "cell centre, northing"),
        f("z_pre", "m", "pre-event surface elevation (NaN if no points)"),
        f("z_post", "m", "post-event surface elevation (NaN if no points)"),
        f("dz", "m", "post - pre elevation difference (NaN if either is missing)"),
        f("dz_error", "m", "propagated 1-sigma error of dz: sqrt(sigma_pre^2 + sigma_post^2)"),
        f("lod", "m", "level of detection at the configured confidence"),
        field("significant", DataType::Boolean, false, "1", "|dz| > lod"),
        field("n_pre", DataType::UInt32, false, "1", "pre-event points in the cell"),
        field("n_post", DataType::UInt32, false, "1", "post-event points in the cell"),
        field(
            "zone_id",
            DataType::Int32,
            false,
            "1",
            "id of the zone the cell belongs to, -1 for none",
        ),
    ])
}

/// Change zones (GeoParquet 1.1: `geometry` is WKB Polygon/MultiPolygon, CRS in `geo`).
pub fn zones_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        field("zone_id", DataType::Int32, false, "1", "zone identifier"),
        field(
            "kind",
            DataType::Utf8,
            false,
            "1",
            "`scar` (significant loss) or `deposit` (significant gain)",
        ),
        f("area", "m^2", "planimetric area of the zone"),
        f("volume", "m^3", "volume of change (positive for both loss and gain)"),
        f("volume_error", "m^3", "1-sigma error of the volume"),
        field("cells", DataType::UInt32, false, "1", "significant cells in the zone"),
        f("centroid_x", "m", "area centroid, easting"),
        f("centroid_y", "m", "area centroid, northing"),
        f("z_max", "m", "highest pre-event elevation in the zone"),
        f("z_min", "m", "lowest post-event elevation in the zone"),
        field("geometry", DataType::Binary, false, "WKB", "zone outline (Polygon or MultiPolygon)"),
    ])
}

/// Cloud-to-cloud distances: one row per post-event point, measured to the pre-event cloud.
pub fn c2c_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        f("x", "m", "post-event point, easting"),
        f("y", "m", "post-event point, northing"),
        f("z", "m", "post-event point, elevation"),
        f("c2c_distance", "m", "3D distance to the nearest pre-event point"),
        f("c2c_dx", "m", "easting component of (post point - nearest pre point)"),
        f("c2c_dy", "m", "northing component of (post point - nearest pre point)"),
        f("c2c_dz", "m", "vertical component of (post point - nearest pre point)"),
        f(
            "c2c_plane_distance",
            "m",
            "signed distance to the plane fitted through the nearest pre-event points (normal oriented up); NaN if not computed",
        ),
    ])
}

/// M3C2 distances (Lague et al. 2013): one row per core point. Column names follow
/// PDAL's `filters.m3c2` (`m3c2_distance`, `m3c2_uncertainty`, `m3c2_significant`,
/// `m3c2_std_dev1/2`, `m3c2_count1/2`); cloud 1 is the pre-event survey, cloud 2 the post.
pub fn m3c2_schema() -> Schema {
    let f = |n: &str, u: &str, d: &str| field(n, DataType::Float64, false, u, d);
    Schema::new(vec![
        f("x", "m", "core point, easting"),
        f("y", "m", "core point, northing"),
        f("z", "m", "core point, elevation"),
        f(
            "m3c2_normal_x",
            "1",
            "unit normal (projection direction), easting component; NaN if undefined",
        ),
        f("m3c2_normal_y", "1", "unit normal, northing component"),
        f("m3c2_normal_z", "1", "unit normal, vertical component"),
        f("m3c2_distance", "m", "signed distance post - pre along the normal (NaN if flagged)"),
        f(
            "m3c2_uncertainty",
            "m",
            "level of detection LoD95 = 1.96 (sqrt(s1^2/n1 + s2^2/n2) + registration error)",
        ),
        field(
            "m3c2_significant",
            DataType::Boolean,
            false,
            "1",
            "|distance| > LoD95 (false when flagged)",
        ),
        f(
            "m3c2_std_dev1",
            "m",
            "spread of the pre-event points along the normal in the cylinder (std. dev. or IQR)",
        ),
        f("m3c2_std_dev2", "m", "spread of the post-event points along the normal in the cylinder"),
        field("m3c2_count1", DataType::UInt32, false, "1", "pre-event points in the cylinder"),
        field("m3c2_count2", DataType::UInt32, false, "1", "post-event points in the cylinder"),
        field(
            "m3c2_flag",
            DataType::UInt8,
            false,
            "1",
            "bit set: 1 = normal undefined, 2 = too few pre-event points, 4 = too few post-event points; 0 = valid",
        ),
    ])
}
