//! One chunk of point records (a `las::PointData` byte slab) to one Arrow record batch of
//! the output schema. Coordinates are `raw * scale + offset` (the header's transforms);
//! the scan angle is in degrees (legacy formats store whole degrees, formats 6-10 units
//! of 0.006°), as the `las` crate's column accessors return them.

use crate::ExtraBytesMode;
use crate::extra::ExtraField;
use crate::input::Input;
use arrow::array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, RecordBatch, UInt8Array, UInt16Array,
};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use las::PointData;
use std::sync::Arc;
use talus_schema::points::OptionalColumns;

/// What the output holds: its schema and the columns that fill it.
#[derive(Debug, Clone)]
pub struct Plan {
    pub optional: OptionalColumns,
    pub extras: Vec<ExtraField>,
    pub mode: ExtraBytesMode,
    /// Whether the output has `classification_original` (ground filtering).
    pub original_class: bool,
    pub schema: SchemaRef,
}

/// The columns every filter needs, decoded first.
pub struct Coords {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub z: Vec<f64>,
    pub class: Vec<u8>,
    /// The classes as read, when the ground filter replaced `class`.
    pub original_class: Option<Vec<u8>>,
}

impl Coords {
    pub fn of(pd: &PointData) -> Coords {
        let ((x, y), (z, class)) = rayon::join(
            || rayon::join(|| pd.x().collect(), || pd.y().collect()),
            || rayon::join(|| pd.z().collect(), || pd.classification().collect()),
        );
        Coords { x, y, z, class, original_class: None }
    }
}

impl Coords {
    /// The coordinates of a chunk whose first point is point `first` of `input`, refused
    /// at the first non-finite point (a header scale so large that `raw * scale + offset`
    /// overflows).
    /// Coordinates of inputs in another CRS are reprojected to the output's.
    pub fn checked(input: &Input, first: u64, pd: &PointData) -> Result<Coords, crate::Error> {
        use rayon::prelude::*;
        let mut c = Coords::of(pd);
        if let Some(t) = &input.transform {
            (c.x.par_iter_mut(), c.y.par_iter_mut(), c.z.par_iter_mut()).into_par_iter().for_each(
                |(x, y, z)| {
                    (*x, *y, *z) = t.apply(*x, *y, *z);
                },
            );
        }
        let bad = (0..c.x.len())
            .find(|&i| !(c.x[i].is_finite() && c.y[i].is_finite() && c.z[i].is_finite()));
        match bad {
            Some(i) => Err(crate::Error::NonFinite {
                path: input.path.clone(),
                index: first + i as u64,
                x: c.x[i],
                y: c.y[i],
                z: c.z[i],
            }),
            None => Ok(c),
        }
    }
}

/// The record batch of one chunk, keeping the rows of `keep` (all rows when `None`).
pub fn batch(
    plan: &Plan,
    input: &Input,
    pd: &PointData,
    coords: Coords,
    keep: Option<&BooleanArray>,
) -> Result<RecordBatch, ArrowError> {
    let opt = plan.optional;
    let coords_original: Option<ArrayRef> =
        coords.original_class.map(|c| Arc::new(UInt8Array::from(c)) as ArrayRef);
    let coords = Coords { original_class: None, ..coords };
    let u16s = |v: Vec<u16>| -> ArrayRef { Arc::new(UInt16Array::from(v)) };
    let (mut columns, tail): (Vec<ArrayRef>, Vec<ArrayRef>) = rayon::join(
        || {
            vec![
                Arc::new(Float64Array::from(coords.x)) as ArrayRef,
                Arc::new(Float64Array::from(coords.y)),
                Arc::new(Float64Array::from(coords.z)),
                u16s(pd.intensity().collect()),
                Arc::new(UInt8Array::from(pd.return_number().collect::<Vec<_>>())),
                Arc::new(UInt8Array::from(pd.number_of_returns().collect::<Vec<_>>())),
                Arc::new(UInt8Array::from(coords.class)),
                Arc::new(Float32Array::from(pd.scan_angle_degrees().collect::<Vec<_>>())),
                u16s(pd.point_source_id().collect()),
            ]
        },
        || {
            let mut tail: Vec<ArrayRef> = Vec::new();
            if opt.gps_time {
                let t: Vec<f64> = pd.gps_time().map(|it| it.collect()).unwrap_or_default();
                tail.push(Arc::new(Float64Array::from(t)));
            }
            if opt.rgb {
                let n = pd.len();
                let (mut r, mut g, mut b) =
                    (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
                if let Some(it) = pd.rgb() {
                    for (cr, cg, cb) in it {
                        r.push(cr);
                        g.push(cg);
                        b.push(cb);
                    }
                }
                tail.extend([u16s(r), u16s(g), u16s(b)]);
            }
            if opt.nir {
                tail.push(u16s(pd.nir().map(|it| it.collect()).unwrap_or_default()));
            }
            for f in &plan.extras {
                if let Some(a) =
                    f.decode(pd.raw_bytes(), input.record_len, input.extra_start, plan.mode)
                {
                    tail.push(a);
                }
            }
            tail
        },
    );
    if plan.original_class {
        let original = coords_original.unwrap_or_else(|| columns[6].clone());
        columns.insert(7, original);
    }
    columns.extend(tail);
    let batch = RecordBatch::try_new(plan.schema.clone(), columns)?;
    match keep {
        Some(mask) => arrow::compute::filter_record_batch(&batch, mask),
        None => Ok(batch),
    }
}
