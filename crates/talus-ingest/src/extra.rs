//! LAS extra bytes: the descriptors of the Extra Bytes VLR (user `LASF_Spec`, record 4,
//! 192 bytes per attribute, LAS 1.4 R15 table 24) and their decoding into Arrow columns.
//!
//! A simple attribute (data types 1-10: `u8, i8, u16, i16, u32, i32, u64, i64, f32, f64`)
//! becomes a column of that type, or `Float64` holding `raw * scale + offset` when the
//! descriptor sets a scale or an offset; the deprecated 2- and 3-element types (11-30)
//! become fixed-size lists of the same; an undocumented attribute (type 0) and any bytes
//! no descriptor covers stay raw (`FixedSizeBinary`).

use crate::ExtraBytesMode;
use arrow::array::{ArrayRef, FixedSizeBinaryArray, FixedSizeListArray, PrimitiveArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Field, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use serde::Serialize;
use std::sync::Arc;

/// Size of one extra-bytes descriptor.
const DESCRIPTOR_LEN: usize = 192;

/// Scalar type of an extra-bytes attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scalar {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
    /// Undocumented bytes, kept raw.
    Bytes,
}

impl Scalar {
    fn size(self) -> usize {
        match self {
            Scalar::U8 | Scalar::I8 | Scalar::Bytes => 1,
            Scalar::U16 | Scalar::I16 => 2,
            Scalar::U32 | Scalar::I32 | Scalar::F32 => 4,
            Scalar::U64 | Scalar::I64 | Scalar::F64 => 8,
        }
    }

    fn arrow(self) -> DataType {
        match self {
            Scalar::U8 => DataType::UInt8,
            Scalar::I8 => DataType::Int8,
            Scalar::U16 => DataType::UInt16,
            Scalar::I16 => DataType::Int16,
            Scalar::U32 => DataType::UInt32,
            Scalar::I32 => DataType::Int32,
            Scalar::U64 => DataType::UInt64,
            Scalar::I64 => DataType::Int64,
            Scalar::F32 => DataType::Float32,
            Scalar::F64 | Scalar::Bytes => DataType::Float64,
        }
    }
}

/// One extra-bytes attribute of a point record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtraField {
    /// Column name in the points table (the descriptor's name, made unique).
    pub column: String,
    /// Name as written in the descriptor.
    pub name: String,
    /// Description from the descriptor.
    pub description: String,
    /// LAS data type code (0-30).
    pub data_type: u8,
    /// Scalar type of each element.
    pub scalar: Scalar,
    /// Elements per point (1, or 2-3 for the deprecated array types).
    pub elements: usize,
    /// Size in bytes of the attribute in each record.
    pub size: usize,
    /// Byte offset of the attribute within the record's extra bytes.
    pub offset: usize,
    /// Scale per element, when the descriptor sets one.
    pub scale: Option<[f64; 3]>,
    /// Offset per element, when the descriptor sets one.
    pub add_offset: Option<[f64; 3]>,
}

impl ExtraField {
    /// Whether two inputs store this attribute the same way (so one column holds both).
    pub fn same_layout(&self, other: &ExtraField) -> bool {
        self.column == other.column
            && self.data_type == other.data_type
            && self.size == other.size
            && self.offset == other.offset
            && self.scale == other.scale
            && self.add_offset == other.add_offset
    }

    fn scaled(&self) -> bool {
        self.scale.is_some() || self.add_offset.is_some()
    }

    /// The Arrow field of this attribute under `mode` (`None` when dropped).
    pub fn arrow_field(&self, mode: ExtraBytesMode) -> Option<Field> {
        let data_type = match mode {
            ExtraBytesMode::Drop => return None,
            ExtraBytesMode::Raw => DataType::FixedSizeBinary(self.size as i32),
            ExtraBytesMode::Decode if self.scalar == Scalar::Bytes => {
                DataType::FixedSizeBinary(self.size as i32)
            }
            ExtraBytesMode::Decode => {
                let t = if self.scaled() { DataType::Float64 } else { self.scalar.arrow() };
                if self.elements == 1 {
                    t
                } else {
                    DataType::FixedSizeList(
                        Arc::new(Field::new("item", t, false)),
                        self.elements as i32,
                    )
                }
            }
        };
        let mut description =
            if self.description.is_empty() { self.name.clone() } else { self.description.clone() };
        description
            .push_str(&format!(" (LAS extra bytes `{}`, data type {}", self.name, self.data_type));
        if let Some(s) = self.scale {
            description.push_str(&format!(", scale {:?}", &s[..self.elements]));
        }
        if let Some(o) = self.add_offset {
            description.push_str(&format!(", offset {:?}", &o[..self.elements]));
        }
        description.push(')');
        let unit = if data_type.is_primitive() || matches!(data_type, DataType::FixedSizeList(..)) {
            "1"
        } else {
            "bytes"
        };
        Some(talus_schema::field(&self.column, data_type, false, unit, &description))
    }

    /// Decode this attribute of every record in `records` (records of `record_len` bytes
    /// whose extra bytes start at `extra_start`).
    pub fn decode(
        &self,
        records: &[u8],
        record_len: usize,
        extra_start: usize,
        mode: ExtraBytesMode,
    ) -> Option<ArrayRef> {
        let start = extra_start + self.offset;
        let n = records.len() / record_len;
        let bytes_at =
            |i: usize| &records[i * record_len + start..i * record_len + start + self.size];
        match mode {
            ExtraBytesMode::Drop => return None,
            ExtraBytesMode::Decode if self.scalar != Scalar::Bytes => {}
            _ => {
                let mut buf = Vec::with_capacity(n * self.size);
                for i in 0..n {
                    buf.extend_from_slice(bytes_at(i));
                }
                let array = FixedSizeBinaryArray::new(self.size as i32, buf.into(), None);
                return Some(Arc::new(array));
            }
        }
        let esize = self.scalar.size();
        let values: ArrayRef = if self.scaled() {
            let scale = self.scale.unwrap_or([1.0; 3]);
            let offset = self.add_offset.unwrap_or([0.0; 3]);
            let mut out = Vec::with_capacity(n * self.elements);
            for i in 0..n {
                let b = bytes_at(i);
                for e in 0..self.elements {
                    let raw = raw_as_f64(self.scalar, &b[e * esize..(e + 1) * esize]);
                    out.push(raw * scale[e] + offset[e]);
                }
            }
            Arc::new(PrimitiveArray::<Float64Type>::from(out))
        } else {
            let gather = |out: &mut Vec<u8>| {
                for i in 0..n {
                    out.extend_from_slice(bytes_at(i));
                }
            };
            let mut le = Vec::with_capacity(n * self.size);
            gather(&mut le);
            match self.scalar {
                Scalar::U8 => from_le::<UInt8Type, 1>(&le, u8::from_le_bytes),
                Scalar::I8 => from_le::<Int8Type, 1>(&le, i8::from_le_bytes),
                Scalar::U16 => from_le::<UInt16Type, 2>(&le, u16::from_le_bytes),
                Scalar::I16 => from_le::<Int16Type, 2>(&le, i16::from_le_bytes),
                Scalar::U32 => from_le::<UInt32Type, 4>(&le, u32::from_le_bytes),
                Scalar::I32 => from_le::<Int32Type, 4>(&le, i32::from_le_bytes),
                Scalar::U64 => from_le::<UInt64Type, 8>(&le, u64::from_le_bytes),
                Scalar::I64 => from_le::<Int64Type, 8>(&le, i64::from_le_bytes),
                Scalar::F32 => from_le::<Float32Type, 4>(&le, f32::from_le_bytes),
                Scalar::F64 => from_le::<Float64Type, 8>(&le, f64::from_le_bytes),
                Scalar::Bytes => unreachable!("raw bytes handled above"),
            }
        };
        if self.elements == 1 {
            return Some(values);
        }
        let item = Arc::new(Field::new("item", values.data_type().clone(), false));
        Some(Arc::new(FixedSizeListArray::new(item, self.elements as i32, values, None)))
    }
}

fn from_le<T: ArrowPrimitiveType, const N: usize>(
    le: &[u8],
    f: fn([u8; N]) -> T::Native,
) -> ArrayRef {
    let values: Vec<T::Native> =
        le.chunks_exact(N).map(|c| f(c.try_into().expect("chunks_exact gives N bytes"))).collect();
    Arc::new(PrimitiveArray::<T>::new(values.into(), None))
}

fn raw_as_f64(scalar: Scalar, b: &[u8]) -> f64 {
    let a = |n: usize| -> [u8; 8] {
        let mut x = [0u8; 8];
        x[..n].copy_from_slice(&b[..n]);
        x
    };
    match scalar {
        Scalar::U8 | Scalar::Bytes => f64::from(b[0]),
        Scalar::I8 => f64::from(b[0] as i8),
        Scalar::U16 => f64::from(u16::from_le_bytes([b[0], b[1]])),
        Scalar::I16 => f64::from(i16::from_le_bytes([b[0], b[1]])),
        Scalar::U32 => f64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Scalar::I32 => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Scalar::U64 => u64::from_le_bytes(a(8)) as f64,
        Scalar::I64 => i64::from_le_bytes(a(8)) as f64,
        Scalar::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        Scalar::F64 => f64::from_le_bytes(a(8)),
    }
}

fn scalar_of(code: u8) -> Option<Scalar> {
    Some(match code {
        1 => Scalar::U8,
        2 => Scalar::I8,
        3 => Scalar::U16,
        4 => Scalar::I16,
        5 => Scalar::U32,
        6 => Scalar::I32,
        7 => Scalar::U64,
        8 => Scalar::I64,
        9 => Scalar::F32,
        10 => Scalar::F64,
        _ => return None,
    })
}

fn text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).trim().to_string()
}

fn f64s(b: &[u8]) -> [f64; 3] {
    let mut out = [0.0; 3];
    for (i, o) in out.iter_mut().enumerate() {
        *o = f64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    }
    out
}

/// Parse the Extra Bytes VLR `data` describing `total` extra bytes per record. Bytes the
/// descriptors leave uncovered become one raw attribute named `extra_bytes`. Column names
/// that clash (case-insensitively) with `taken` or with each other get an `extra_` prefix
/// or a numeric suffix.
pub fn parse(data: Option<&[u8]>, total: usize, taken: &[&str]) -> Result<Vec<ExtraField>, String> {
    let mut fields = Vec::new();
    let mut offset = 0usize;
    if let Some(data) = data {
        if data.len() % DESCRIPTOR_LEN != 0 {
            return Err(format!(
                "{} bytes is not a whole number of 192-byte descriptors",
                data.len()
            ));
        }
        for d in data.chunks_exact(DESCRIPTOR_LEN) {
            let (code, options) = (d[2], d[3]);
            let (scalar, elements, size) = match code {
                0 => (Scalar::Bytes, 1, usize::from(options)),
                1..=10 => {
                    let s = scalar_of(code).expect("1..=10");
                    (s, 1, s.size())
                }
                11..=30 => {
                    let base = (code - 1) % 10 + 1;
                    let s = scalar_of(base).expect("1..=10");
                    let n = if code <= 20 { 2 } else { 3 };
                    (s, n, n * s.size())
                }
                _ => {
                    return Err(format!(
                        "attribute `{}` has unknown data type {code}",
                        text(&d[4..36])
                    ));
                }
            };
            if size == 0 {
                return Err(format!("attribute `{}` has size 0", text(&d[4..36])));
            }
            let name = text(&d[4..36]);
            let has_options = code != 0;
            fields.push(ExtraField {
                column: name.clone(),
                description: text(&d[160..192]),
                name,
                data_type: code,
                scalar,
                elements,
                size,
                offset,
                scale: (has_options && options & 0b1000 != 0).then(|| f64s(&d[112..136])),
                add_offset: (has_options && options & 0b1_0000 != 0).then(|| f64s(&d[136..160])),
            });
            offset += size;
        }
        if offset > total {
            return Err(format!(
                "the descriptors cover {offset} bytes but the records have {total} extra bytes"
            ));
        }
    }
    if offset < total {
        fields.push(ExtraField {
            column: "extra_bytes".into(),
            name: String::new(),
            description: "extra bytes no descriptor documents".into(),
            data_type: 0,
            scalar: Scalar::Bytes,
            elements: 1,
            size: total - offset,
            offset,
            scale: None,
            add_offset: None,
        });
    }
    let mut used: Vec<String> = taken.iter().map(|t| t.to_lowercase()).collect();
    for (i, f) in fields.iter_mut().enumerate() {
        let mut column = if f.column.is_empty() { format!("extra_{i}") } else { f.column.clone() };
        if used.contains(&column.to_lowercase()) {
            column = format!("extra_{column}");
        }
        let base = column.clone();
        let mut k = 2;
        while used.contains(&column.to_lowercase()) {
            column = format!("{base}_{k}");
            k += 1;
        }
        used.push(column.to_lowercase());
        f.column = column;
    }
    Ok(fields)
}

/// Build an Extra Bytes VLR descriptor (used by tests and benchmarks that write LAS).
pub fn descriptor(
    name: &str,
    data_type: u8,
    options: u8,
    scale: [f64; 3],
    offset: [f64; 3],
    description: &str,
) -> Vec<u8> {
    let mut d = vec![0u8; DESCRIPTOR_LEN];
    d[2] = data_type;
    d[3] = options;
    let n = name.len().min(32);
    d[4..4 + n].copy_from_slice(&name.as_bytes()[..n]);
    for i in 0..3 {
        d[112 + 8 * i..120 + 8 * i].copy_from_slice(&scale[i].to_le_bytes());
        d[136 + 8 * i..144 + 8 * i].copy_from_slice(&offset[i].to_le_bytes());
    }
    let n = description.len().min(32);
    d[160..160 + n].copy_from_slice(&description.as_bytes()[..n]);
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};

    #[test]
    fn descriptors_are_parsed_and_names_made_unique() {
        let mut vlr = descriptor("Amplitude", 3, 0b1000, [0.5, 0.0, 0.0], [1.0, 0.0, 0.0], "amp");
        vlr.extend(descriptor("intensity", 13, 0, [0.0; 3], [0.0; 3], ""));
        vlr.extend(descriptor("raw", 0, 3, [0.0; 3], [0.0; 3], ""));
        let f = parse(Some(&vlr), 2 + 4 + 3 + 2, &["x", "intensity"]).unwrap();
        assert_eq!(f.len(), 4);
        assert_eq!(f[0].column, "Amplitude");
        assert_eq!(f[0].scale.unwrap()[0], 0.5);
        assert!(f[0].add_offset.is_none(), "offset bit not set");
        assert_eq!(
            (f[1].column.as_str(), f[1].elements, f[1].size, f[1].offset),
            ("extra_intensity", 2, 4, 2)
        );
        assert_eq!((f[2].scalar, f[2].size, f[2].offset), (Scalar::Bytes, 3, 6));
        assert_eq!((f[3].column.as_str(), f[3].size, f[3].offset), ("extra_bytes", 2, 9));
        assert!(parse(Some(&vlr), 4, &[]).is_err());
        assert!(parse(Some(&vlr[..100]), 11, &[]).is_err());
    }

    #[test]
    fn decoding_applies_scale_and_keeps_arrays() {
        let mut vlr = descriptor("a", 3, 0b1000, [0.5, 0.0, 0.0], [0.0; 3], "");
        vlr.extend(descriptor("b", 14, 0, [0.0; 3], [0.0; 3], ""));
        let f = parse(Some(&vlr), 6, &[]).unwrap();
        // two records of 2 bytes of "standard" fields then 6 extra bytes
        let mut rec = vec![];
        for (a, b0, b1) in [(10u16, -1i16, 2i16), (3, 7, -8)] {
            rec.extend([0u8, 0]);
            rec.extend(a.to_le_bytes());
            rec.extend(b0.to_le_bytes());
            rec.extend(b1.to_le_bytes());
        }
        let a = f[0].decode(&rec, 8, 2, ExtraBytesMode::Decode).unwrap();
        assert_eq!(a.as_primitive::<Float64Type>().values().to_vec(), vec![5.0, 1.5]);
        let b = f[1].decode(&rec, 8, 2, ExtraBytesMode::Decode).unwrap();
        let b = b.as_fixed_size_list();
        assert_eq!(b.len(), 2);
        assert_eq!(b.values().as_primitive::<Int16Type>().values().to_vec(), vec![-1, 2, 7, -8]);
        assert_eq!(f[1].arrow_field(ExtraBytesMode::Decode).unwrap().data_type(), b.data_type());
        let raw = f[1].decode(&rec, 8, 2, ExtraBytesMode::Raw).unwrap();
        assert_eq!(raw.as_fixed_size_binary().value(1), &[7, 0, 0xf8, 0xff]);
    }
}
