//! Writing the outputs: every table is built in memory first, then each file is written
//! atomically; if a later file fails, the ones already written by this run are removed,
//! so a failed run leaves no partial set of outputs.

use crate::{DiffResult, Error, output_paths};
use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, RecordBatch, UInt8Array, UInt32Array,
};
use arrow::datatypes::Schema;
use std::path::Path;
use std::sync::Arc;
use talus_io::{Crs, Provenance};
use talus_schema::diff::{GRID_KEY, c2c_schema, dod_schema, m3c2_schema};

const CHUNK: usize = 1 << 20;

fn f64a(v: impl IntoIterator<Item = f64>) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(v))
}

fn batch(path: &Path, schema: &Arc<Schema>, cols: Vec<ArrayRef>) -> Result<RecordBatch, Error> {
    RecordBatch::try_new(schema.clone(), cols)
        .map_err(|source| Error::Arrow { path: path.to_path_buf(), source })
}

/// Write one table from row chunks.
fn write_chunks(
    path: &Path,
    schema: Arc<Schema>,
    prov: &Provenance,
    rows: usize,
    mut build: impl FnMut(std::ops::Range<usize>) -> Vec<ArrayRef>,
) -> Result<(), Error> {
    let mut sink = talus_io::ParquetSink::create(path, schema.clone(), prov)?;
    let mut start = 0;
    loop {
        let end = (start + CHUNK).min(rows);
        let b = batch(path, &schema, build(start..end))?;
        sink.write(&b)?;
        start = end;
        if start >= rows {
            break;
        }
    }
    sink.finish()?;
    Ok(())
}

pub(crate) fn write_all(
    config: &crate::Config,
    r: &DiffResult,
    crs: Option<&Crs>,
    inputs: &[&Path],
    out_dir: &Path,
) -> Result<(), Error> {
    let paths = output_paths(out_dir);
    let mut written: Vec<&Path> = Vec::new();
    let result = (|| {
        let mut base = Provenance::new("diff", env!("CARGO_PKG_VERSION"), config)
            .with_inputs(inputs)?
            .with_crs(crs.cloned());
        if let Some(reg) = &r.summary.registration {
            base = reg.to_provenance(base);
        }
        write_dod(&paths[0], r, &base)?;
        written.push(&paths[0]);
        write_zones(&paths[1], r, &base)?;
        written.push(&paths[1]);
        write_m3c2(&paths[2], r, &base)?;
        written.push(&paths[2]);
        write_c2c(&paths[3], r, &base)?;
        written.push(&paths[3]);
        let mut summary = serde_json::to_vec_pretty(&r.summary).unwrap_or_default();
        summary.push(b'\n');
        talus_io::AtomicFile::write_all(&paths[4], &summary)?;
        written.push(&paths[4]);
        // GeoTIFF rasters of the DoD grid for GIS (GDAL, rasterio, QGIS).
        let d = &r.dod;
        let g = talus_io::geotiff::GridSpec {
            x0: d.grid.x0,
            y0: d.grid.y0,
            cell: d.grid.cell,
            nx: d.grid.nx,
            ny: d.grid.ny,
        };
        let significant: Vec<f64> = (0..d.dz.len())
            .map(
                |k| if d.dz[k].is_nan() { f64::NAN } else { f64::from(u8::from(d.significant[k])) },
            )
            .collect();
        for (path, values) in [(&paths[5], &d.dz), (&paths[6], &d.lod), (&paths[7], &significant)] {
            talus_io::geotiff::write(path, &g, values, crs)?;
            written.push(path);
        }
        // The point results as LAZ with scalar fields, for CloudCompare.
        write_point_fields(&paths[8], &paths[9], r, crs)?;
        written.push(&paths[8]);
        written.push(&paths[9]);
        Ok(())
    })();
    if result.is_err() {
        for p in written {
            let _ = std::fs::remove_file(p);
        }
    }
    result
}

fn write_dod(path: &Path, r: &DiffResult, base: &Provenance) -> Result<(), Error> {
    let d = &r.dod;
    let g = d.grid;
    let mut zone_of = vec![-1i32; g.len()];
    for z in &r.zones {
        for &i in &z.cells {
            zone_of[i] = z.zone_id;
        }
    }
    let prov = base.clone().with_extra(GRID_KEY, serde_json::to_string(&g).unwrap_or_default());
    write_chunks(path, Arc::new(dod_schema()), &prov, g.len(), |rg| {
        vec![
            Arc::new(UInt32Array::from_iter_values(rg.clone().map(|i| (i / g.nx) as u32))),
            Arc::new(UInt32Array::from_iter_values(rg.clone().map(|i| (i % g.nx) as u32))),
            f64a(rg.clone().map(|i| g.centre(i).0)),
            f64a(rg.clone().map(|i| g.centre(i).1)),
            f64a(rg.clone().map(|i| d.pre.z[i])),
            f64a(rg.clone().map(|i| d.post.z[i])),
            f64a(rg.clone().map(|i| d.dz[i])),
            f64a(rg.clone().map(|i| d.dz_error[i])),
            f64a(rg.clone().map(|i| d.lod[i])),
            Arc::new(BooleanArray::from(d.significant[rg.clone()].to_vec())),
            Arc::new(UInt32Array::from_iter_values(rg.clone().map(|i| d.pre.n[i]))),
            Arc::new(UInt32Array::from_iter_values(rg.clone().map(|i| d.post.n[i]))),
            Arc::new(Int32Array::from_iter_values(rg.map(|i| zone_of[i]))),
        ]
    })
}

fn write_zones(path: &Path, r: &DiffResult, base: &Provenance) -> Result<(), Error> {
    let rows: Vec<talus_io::zones::ZoneRow> = r
        .zones
        .iter()
        .map(|z| talus_io::zones::ZoneRow {
            zone_id: z.zone_id,
            kind: z.kind,
            area: z.area,
            volume: z.volume.volume,
            volume_error: z.volume.error,
            cells: z.cells.len() as u32,
            centroid: z.centroid,
            z_max: z.z_max,
            z_min: z.z_min,
            polygons: z.polygons.clone(),
        })
        .collect();
    talus_io::zones::write(path, &rows, base)?;
    Ok(())
}

fn write_m3c2(path: &Path, r: &DiffResult, base: &Provenance) -> Result<(), Error> {
    let m = &r.m3c2;
    write_chunks(path, Arc::new(m3c2_schema()), base, m.len(), |rg| {
        let s = &m[rg];
        vec![
            f64a(s.iter().map(|r| r.core[0])),
            f64a(s.iter().map(|r| r.core[1])),
            f64a(s.iter().map(|r| r.core[2])),
            f64a(s.iter().map(|r| r.normal[0])),
            f64a(s.iter().map(|r| r.normal[1])),
            f64a(s.iter().map(|r| r.normal[2])),
            f64a(s.iter().map(|r| r.distance)),
            f64a(s.iter().map(|r| r.uncertainty)),
            Arc::new(BooleanArray::from(s.iter().map(|r| r.significant).collect::<Vec<_>>())),
            f64a(s.iter().map(|r| r.std_dev1)),
            f64a(s.iter().map(|r| r.std_dev2)),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|r| r.count1))),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|r| r.count2))),
            Arc::new(UInt8Array::from_iter_values(s.iter().map(|r| r.flag))),
        ]
    })
}

/// `m3c2.laz` (core points) and `c2c.laz` (post-event points) with their distances as
/// extra-bytes scalar fields.
fn write_point_fields(
    m3c2_path: &Path,
    c2c_path: &Path,
    r: &DiffResult,
    crs: Option<&Crs>,
) -> Result<(), Error> {
    use talus_io::las_fields::{Field, write};
    let m = &r.m3c2;
    let col = |f: fn(&crate::m3c2::M3c2Row) -> f64| m.iter().map(f).collect::<Vec<f64>>();
    let (distance, uncertainty) = (col(|r| r.distance), col(|r| r.uncertainty));
    let (significant, flag) =
        (col(|r| f64::from(u8::from(r.significant))), col(|r| f64::from(r.flag)));
    let cores: Vec<[f64; 3]> = m.iter().map(|r| r.core).collect();
    write(
        m3c2_path,
        &cores,
        &[
            Field {
                name: "m3c2_distance",
                description: "post - pre along normal (m)",
                values: &distance,
            },
            Field {
                name: "m3c2_uncertainty",
                description: "level of detection LoD95 (m)",
                values: &uncertainty,
            },
            Field {
                name: "m3c2_significant",
                description: "1: |distance| > LoD95",
                values: &significant,
            },
            Field {
                name: "m3c2_flag",
                description: "0 valid, else why not computed",
                values: &flag,
            },
        ],
        crs,
    )?;
    let c = &r.c2c;
    let col = |f: fn(&crate::c2c::C2cRow) -> f64| c.iter().map(f).collect::<Vec<f64>>();
    let (distance, dz, plane) =
        (col(|r| r.distance), col(|r| r.delta[2]), col(|r| r.plane_distance));
    let points: Vec<[f64; 3]> = c.iter().map(|r| r.point).collect();
    write(
        c2c_path,
        &points,
        &[
            Field {
                name: "c2c_distance",
                description: "3D distance to nearest pre (m)",
                values: &distance,
            },
            Field { name: "c2c_dz", description: "vertical part of that offset (m)", values: &dz },
            Field {
                name: "c2c_plane_distance",
                description: "signed, to local pre plane (m)",
                values: &plane,
            },
        ],
        crs,
    )?;
    Ok(())
}

fn write_c2c(path: &Path, r: &DiffResult, base: &Provenance) -> Result<(), Error> {
    let c = &r.c2c;
    write_chunks(path, Arc::new(c2c_schema()), base, c.len(), |rg| {
        let s = &c[rg];
        vec![
            f64a(s.iter().map(|r| r.point[0])),
            f64a(s.iter().map(|r| r.point[1])),
            f64a(s.iter().map(|r| r.point[2])),
            f64a(s.iter().map(|r| r.distance)),
            f64a(s.iter().map(|r| r.delta[0])),
            f64a(s.iter().map(|r| r.delta[1])),
            f64a(s.iter().map(|r| r.delta[2])),
            f64a(s.iter().map(|r| r.plane_distance)),
        ]
    })
}
