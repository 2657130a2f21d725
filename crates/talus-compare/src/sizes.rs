//! Block sizes seeded and deposited: per size class, where the blocks started and where
//! they stopped along the flow (from the scar's crown towards the surveyed deposit, as
//! the section figure), so a reader sees whether the large blocks ran further, as field
//! deposits of rock avalanches show.

use crate::figures::Section;
use crate::inputs::Data;
use serde::Serialize;

/// One size class.
#[derive(Debug, Clone, Serialize)]
pub struct SizeRow {
    /// Class as seeded (0 = the largest).
    pub class: u32,
    /// Mean block volume of the class, m³.
    pub block_volume: f64,
    /// Mean edges a, b, c of its blocks, m (classes of one volume may differ in shape).
    pub edges: [f64; 3],
    /// Blocks of the class.
    pub blocks: usize,
    /// Their volume, m³.
    pub volume: f64,
    /// Blocks still on the terrain at the end.
    pub deposited: usize,
    /// Median distance along the flow of the initial centres, m.
    pub start_median: f64,
    /// Median distance along the flow of the final centres of the deposited blocks, m.
    pub stop_median: f64,
    /// 90th percentile of the same, m.
    pub stop_p90: f64,
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_unstable_by(f64::total_cmp);
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// The table, one row per class present (empty with a single class), and the axis it
/// measures along.
pub fn table(data: &Data, section: &Section) -> (Vec<SizeRow>, &'static str) {
    let fin = &data.final_blocks;
    let mut classes: Vec<u32> = fin.class.clone();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() < 2 {
        return (Vec::new(), section.label);
    }
    let start: std::collections::BTreeMap<u32, f64> = data
        .initial_blocks
        .id
        .iter()
        .enumerate()
        .map(|(i, id)| (*id, section.along(data.initial_blocks.x[i], data.initial_blocks.y[i])))
        .collect();
    let rows = classes
        .into_iter()
        .map(|k| {
            let idx: Vec<usize> = (0..fin.len()).filter(|&i| fin.class[i] == k).collect();
            let volume: f64 = idx.iter().map(|&i| fin.volume(i)).sum();
            let mut s: Vec<f64> =
                idx.iter().filter_map(|&i| start.get(&fin.id[i]).copied()).collect();
            let mut e: Vec<f64> = idx
                .iter()
                .filter(|&&i| fin.active[i])
                .map(|&i| section.along(fin.x[i], fin.y[i]))
                .collect();
            let n = idx.len() as f64;
            let mean = |e: &[f64]| idx.iter().map(|&i| e[i]).sum::<f64>() / n;
            SizeRow {
                class: k,
                block_volume: volume / n,
                edges: [mean(&fin.a), mean(&fin.b), mean(&fin.c)],
                blocks: idx.len(),
                volume,
                deposited: e.len(),
                start_median: quantile(&mut s, 0.5),
                stop_median: quantile(&mut e, 0.5),
                stop_p90: quantile(&mut e, 0.9),
            }
        })
        .collect();
    (rows, section.label)
}

#[cfg(test)]
mod tests {
    use super::quantile;

    #[test]
    fn quantiles_interpolate() {
        let mut v = vec![4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&mut v, 0.5), 2.5);
        assert_eq!(quantile(&mut v, 0.0), 1.0);
        assert!((quantile(&mut v, 0.9) - 3.7).abs() < 1e-12);
        assert!(quantile(&mut [], 0.5).is_nan());
    }
}
