//! The calibration's sensitivity figure (`figures/sensitivity.png`): every member's score
//! and metrics against each varied parameter.

use plotters::prelude::*;
use std::path::Path;
use talus_report::PlotError;
use talus_report::plot::{FONT, draw_png, short};
use talus_report::tryp;

/// One panel row of [`sensitivity`]: a quantity plotted against every parameter.
#[derive(Debug, Clone)]
pub struct SensitivitySeries<'a> {
    /// Axis label, with unit.
    pub label: &'a str,
    /// One value per member (NaN: not drawn).
    pub values: &'a [f64],
}

/// Calibration sensitivity (`talus calibrate`): a grid of scatter panels, one column per
/// The margin around `[lo, hi]` on an axis: 8 % of the span, at least 2 % of the values'
/// magnitude; for a single value (every member alike, or all failed but one), 10 % of it,
/// or 1 around zero, so that the axis stays readable instead of spanning ±1e-9.
fn axis_pad(lo: f64, hi: f64) -> f64 {
    let scale = hi.abs().max(lo.abs());
    if hi > lo {
        ((hi - lo) * 0.08).max(scale * 0.02)
    } else if scale > 0.0 {
        scale * 0.1
    } else {
        1.0
    }
}

/// varied parameter `(name, value per member)`, one row per series (score, IoU, ...);
/// `best` (a member index) is drawn as a red cross in every panel.
pub fn sensitivity(
    path: &Path,
    size: (u32, u32),
    params: &[(&str, &[f64])],
    series: &[SensitivitySeries],
    best: Option<usize>,
) -> Result<(), PlotError> {
    let range = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .copied()
            .filter(|x| x.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
        if !lo.is_finite() { (0.0, 1.0) } else { (lo - axis_pad(lo, hi), hi + axis_pad(lo, hi)) }
    };
    draw_png(path, size, |root| {
        let root = tryp!(root.titled("Sensitivity of the calibration", (FONT, 24)));
        let cells = root.split_evenly((series.len().max(1), params.len().max(1)));
        for (r, s) in series.iter().enumerate() {
            let (ylo, yhi) = range(s.values);
            for (c, (name, xs)) in params.iter().enumerate() {
                let (xlo, xhi) = range(xs);
                let mut chart = tryp!(
                    ChartBuilder::on(&cells[r * params.len() + c])
                        .margin(8)
                        .margin_right(20)
                        .x_label_area_size(40)
                        .y_label_area_size(60)
                        .build_cartesian_2d(xlo..xhi, ylo..yhi)
                );
                tryp!(
                    chart
                        .configure_mesh()
                        .x_desc(*name)
                        .y_desc(s.label)
                        .x_labels(5)
                        .y_labels(5)
                        .x_label_formatter(&|v| short(*v))
                        .y_label_formatter(&|v| short(*v))
                        .light_line_style(RGBColor(235, 235, 235))
                        .label_style((FONT, 12))
                        .draw()
                );
                let pts: Vec<(f64, f64)> = xs
                    .iter()
                    .zip(s.values)
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .map(|(x, y)| (*x, *y))
                    .collect();
                tryp!(chart.draw_series(pts.iter().map(|p| Circle::new(
                    *p,
                    4,
                    RGBColor(31, 119, 180).mix(0.7).filled()
                ))));
                if let Some(b) = best
                    && let (Some(x), Some(y)) = (xs.get(b), s.values.get(b))
                    && x.is_finite()
                    && y.is_finite()
                {
                    tryp!(chart.draw_series(std::iter::once(Cross::new(
                        (*x, *y),
                        7,
                        RGBColor(214, 39, 40).stroke_width(3)
                    ))));
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::axis_pad;

    #[test]
    fn axes_of_constant_series_stay_readable() {
        assert_eq!(axis_pad(0.0, 0.0), 1.0);
        assert!((axis_pad(0.6, 0.6) - 0.06).abs() < 1e-15);
        assert!((axis_pad(0.0, 1.0) - 0.08).abs() < 1e-15);
        assert!((axis_pad(100.0, 101.0) - 2.02).abs() < 1e-12);
    }
}
