//! The figures (PNG, plotters with the bundled DejaVu Sans font).
//!
//! * `dod.png`: DEM of difference with the scar and deposit outlines (survey only).
//! * `deposit.png`: surveyed and simulated deposit thickness side by side, same colour
//!   scale, surveyed deposit outline on both (thesis Fig. 6.33, made quantitative).
//! * `energy_kinetic.png`: total, translational and rotational kinetic energy (Fig. 6.29).
//! * `energy_dissipation.png`: dissipation per step, cumulative dissipation and potential
//!   energy (Fig. 6.30).
//! * `trajectories.png`: plan view of the block trajectories; `trajectories_side.png`:
//!   the same in a section along the flow (from the scar's crown towards the deposit, or
//!   along the blocks' mean displacement without a survey), with the pre- and post-event
//!   ground profiles under the paths.
//! * `deposit_along_flow.png`: the deposit's volume per metre along the flow, surveyed
//!   and simulated (and per size class), binned at twice the survey's cell (survey only).
//!
//! PNGs are drawn into a temporary file beside the destination and renamed into place.

use crate::deposit::ThicknessMap;
use crate::hazard::HazardMap;
use crate::inputs::{CELL_SCAR, Data, Grid, Survey, Zone, ZoneKind};
use crate::{Config, Error};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use talus_report::plot::{Area, Chart, FONT, draw_png, short};
use talus_report::tryp;

/// A figure written by [`draw_all`].
#[derive(Debug, Clone)]
pub struct Figure {
    /// File name under `figures/`.
    pub file: String,
    /// Full path.
    pub path: PathBuf,
    /// Title.
    pub title: String,
    /// Caption for the report.
    pub caption: String,
}

// ---------------------------------------------------------------- colour maps

const VIRIDIS: [(u8, u8, u8); 8] = [
    (68, 1, 84),
    (70, 50, 127),
    (54, 92, 141),
    (39, 127, 143),
    (31, 162, 136),
    (74, 194, 110),
    (160, 219, 57),
    (254, 232, 37),
];
/// Red (loss) - white - blue (gain), like the thesis's Fig. 6.25 (deficit in red).
const DIVERGING: [(u8, u8, u8); 7] = [
    (178, 24, 43),
    (239, 138, 98),
    (253, 219, 199),
    (247, 247, 247),
    (209, 229, 240),
    (103, 169, 207),
    (33, 102, 172),
];

fn ramp(stops: &[(u8, u8, u8)], t: f64) -> RGBColor {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let s = t * (stops.len() - 1) as f64;
    let i = (s.floor() as usize).min(stops.len() - 2);
    let f = s - i as f64;
    let lerp = |a: u8, b: u8| (a as f64 + f * (b as f64 - a as f64)).round() as u8;
    let (a, b) = (stops[i], stops[i + 1]);
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}

fn viridis(t: f64) -> RGBColor {
    ramp(&VIRIDIS, t)
}

fn diverging(t: f64) -> RGBColor {
    ramp(&DIVERGING, t)
}

const SCAR_COLOUR: RGBColor = RGBColor(0, 0, 0);
const DEPOSIT_COLOUR: RGBColor = RGBColor(220, 0, 120);
const NODATA: RGBColor = RGBColor(225, 225, 225);

// ---------------------------------------------------------------- helpers

/// Quantile of the finite values (linear interpolation), `None` if there are none.
fn quantile(values: impl Iterator<Item = f64>, q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let p = q * (v.len() - 1) as f64;
    let i = p.floor() as usize;
    let j = (i + 1).min(v.len() - 1);
    Some(v[i] + (p - i as f64) * (v[j] - v[i]))
}

/// Expand `[xmin, ymin, xmax, ymax]` so that it has the aspect ratio `w / h` (equal
/// scale on both axes), with a small margin.
fn equal_aspect(e: [f64; 4], w: f64, h: f64) -> [f64; 4] {
    let (mut dx, mut dy) = ((e[2] - e[0]).max(1e-9) * 1.04, (e[3] - e[1]).max(1e-9) * 1.04);
    let (cx, cy) = ((e[0] + e[2]) / 2.0, (e[1] + e[3]) / 2.0);
    if dx / dy > w / h {
        dy = dx * h / w;
    } else {
        dx = dy * w / h;
    }
    [cx - dx / 2.0, cy - dy / 2.0, cx + dx / 2.0, cy + dy / 2.0]
}

const CAPTION: u32 = 24;
const MARGIN: u32 = 12;
const XLAB: u32 = 56;
const YLAB: u32 = 96;

/// The figure height at which a plan chart of `extent` in a panel `panel_width` pixels
/// wide fills its plotting area (equal scales, no band left empty above and below), at
/// most `max` and at least 300 pixels.
fn plan_height(panel_width: u32, extent: [f64; 4], max: u32) -> u32 {
    let pw = panel_width.saturating_sub(2 * MARGIN + YLAB).max(10) as f64;
    let (dx, dy) = ((extent[2] - extent[0]).max(1e-9), (extent[3] - extent[1]).max(1e-9));
    let ph = pw * dy / dx;
    let h = ph.ceil() as u32 + 2 * MARGIN + XLAB + CAPTION + 12;
    h.clamp(300, max.max(300))
}

/// A chart with equal scale on both axes covering `extent`.
fn plan_chart<'a, 'b>(
    area: &'a Area<'b>,
    title: &str,
    extent: [f64; 4],
    xdesc: &str,
    ydesc: &str,
) -> Result<(Chart<'a, 'b>, [f64; 4]), String> {
    let (w, h) = area.dim_in_pixel();
    let pw = w.saturating_sub(2 * MARGIN + YLAB).max(10) as f64;
    let ph = h.saturating_sub(2 * MARGIN + XLAB + CAPTION + 12).max(10) as f64;
    let e = equal_aspect(extent, pw, ph);
    let mut chart = tryp!(
        ChartBuilder::on(area)
            .caption(title, (FONT, CAPTION))
            .margin(MARGIN)
            .x_label_area_size(XLAB)
            .y_label_area_size(YLAB)
            .build_cartesian_2d(e[0]..e[2], e[1]..e[3])
    );
    tryp!(
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(xdesc)
            .y_desc(ydesc)
            // About one easting label per 130 px, so that 7-digit values do not overlap.
            .x_labels(((pw / 130.0) as usize).clamp(2, 6))
            .y_labels(6)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()
    );
    Ok((chart, e))
}

/// Fill the plotting area pixel by pixel with `colour(x, y)` (data coordinates).
fn draw_raster(
    chart: &Chart,
    e: [f64; 4],
    colour: impl Fn(f64, f64) -> Option<RGBColor>,
) -> Result<(), String> {
    let area = chart.plotting_area().strip_coord_spec();
    let (w, h) = area.dim_in_pixel();
    for py in 0..h {
        let y = e[3] - (py as f64 + 0.5) / h as f64 * (e[3] - e[1]);
        for px in 0..w {
            let x = e[0] + (px as f64 + 0.5) / w as f64 * (e[2] - e[0]);
            if let Some(c) = colour(x, y) {
                tryp!(area.draw_pixel((px as i32, py as i32), &c));
            }
        }
    }
    Ok(())
}

/// Draw zone outlines of one kind; the first ring carries the legend label.
fn draw_zones(
    chart: &mut Chart,
    zones: &[Zone],
    kind: ZoneKind,
    colour: RGBColor,
    label: &str,
) -> Result<(), String> {
    let mut labelled = false;
    for z in zones.iter().filter(|z| z.kind == kind) {
        for poly in &z.polygons {
            for ring in poly {
                let pts: Vec<(f64, f64)> = ring.iter().map(|p| (p[0], p[1])).collect();
                let s = tryp!(chart.draw_series(LineSeries::new(pts, colour.stroke_width(3))));
                if !labelled {
                    s.label(label).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(3))
                    });
                    labelled = true;
                }
            }
        }
    }
    Ok(())
}

fn legend<'a, 'b: 'a>(chart: &mut Chart<'a, 'b>, pos: SeriesLabelPosition) -> Result<(), String> {
    tryp!(
        chart
            .configure_series_labels()
            .position(pos)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 15))
            .draw()
    );
    Ok(())
}

/// The length of a map's scale bar: 1, 2 or 5 × 10^k m, at most a quarter of `width`.
fn scale_bar_length(width: f64) -> f64 {
    let target = (width / 4.0).max(1e-6);
    let k = 10f64.powf(target.log10().floor());
    [5.0, 2.0, 1.0].into_iter().map(|m| m * k).find(|l| *l <= target).unwrap_or(k)
}

/// Map furniture on a north-up plan chart covering `e`: a scale bar (lower left, on
/// white so that it reads over any raster) and a north arrow (lower right).
fn map_furniture(chart: &mut Chart, e: [f64; 4]) -> Result<(), String> {
    let (w, h) = (e[2] - e[0], e[3] - e[1]);
    let len = scale_bar_length(w);
    let (x0, y0) = (e[0] + 0.04 * w, e[1] + 0.05 * h);
    let back = [(x0 - 0.015 * w, y0 - 0.03 * h), (x0 + len + 0.015 * w, y0 + 0.07 * h)];
    tryp!(chart.draw_series(std::iter::once(Rectangle::new(back, WHITE.mix(0.85).filled()))));
    let bar = [(x0, y0), (x0 + len, y0)];
    tryp!(
        chart.draw_series(std::iter::once(PathElement::new(bar.to_vec(), BLACK.stroke_width(3))))
    );
    for x in [x0, x0 + len] {
        let tick = vec![(x, y0), (x, y0 + 0.015 * h)];
        tryp!(chart.draw_series(std::iter::once(PathElement::new(tick, BLACK.stroke_width(2)))));
    }
    let label = if len >= 1000.0 { format!("{} km", len / 1000.0) } else { format!("{len} m") };
    tryp!(chart.draw_series(std::iter::once(Text::new(
        label,
        (x0, y0 + 0.055 * h),
        (FONT, 14).into_font().color(&BLACK)
    ))));
    // North arrow (lower right, clear of the legends): a triangle pointing up, and N.
    let (ax, ay) = (e[2] - 0.06 * w, e[1] + 0.08 * h);
    let arrow = vec![(ax, ay + 0.09 * h), (ax - 0.02 * w, ay), (ax + 0.02 * w, ay)];
    tryp!(chart.draw_series(std::iter::once(Polygon::new(arrow, BLACK.filled()))));
    tryp!(chart.draw_series(std::iter::once(Text::new(
        "N",
        (ax - 0.012 * w, ay - 0.01 * h),
        (FONT, 16).into_font().color(&BLACK)
    ))));
    Ok(())
}

/// The CRS of the data, for axis titles.
fn crs_label(data: &Data) -> String {
    data.crs.as_ref().map_or_else(|| "unknown CRS".to_string(), talus_io::Crs::label)
}

/// The axis titles of a plan map, the CRS on the easting's.
fn plan_axes(crs: &str) -> (String, String) {
    (format!("easting (m), {crs}"), "northing (m)".to_string())
}

/// A vertical colour bar for values in `[lo, hi]`.
fn colour_bar(
    area: &Area,
    lo: f64,
    hi: f64,
    label: &str,
    cmap: fn(f64) -> RGBColor,
) -> Result<(), String> {
    let hi = if hi > lo { hi } else { lo + 1.0 };
    let (_, h) = area.dim_in_pixel();
    let mut chart = tryp!(
        ChartBuilder::on(area)
            .margin_top(MARGIN + CAPTION + 12)
            .margin_bottom(MARGIN + XLAB)
            .margin_left(4)
            .margin_right(8)
            .y_label_area_size(0)
            .right_y_label_area_size(70)
            .build_cartesian_2d(0.0..1.0, lo..hi)
    );
    let n = (h as usize).max(2);
    tryp!(chart.draw_series((0..n).map(|i| {
        let (a, b) =
            (lo + (hi - lo) * i as f64 / n as f64, lo + (hi - lo) * (i + 1) as f64 / n as f64);
        Rectangle::new([(0.0, a), (1.0, b)], cmap((a - lo) / (hi - lo)).filled())
    })));
    tryp!(
        chart
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_desc(label)
            .y_labels(8)
            .y_label_formatter(&|v| short(*v))
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 16))
            .draw()
    );
    Ok(())
}

/// Value at a point of a dense grid vector.
fn sample(grid: &Grid, values: &[f64], x: f64, y: f64) -> Option<f64> {
    grid.cell_of(x, y).map(|(r, c)| values[grid.index(r, c)])
}

// ---------------------------------------------------------------- figures

fn dod_figure(config: &Config, s: &Survey, crs: &str, path: &Path) -> Result<(), Error> {
    let (xdesc, ydesc) = plan_axes(crs);
    let size = (config.figure_width, config.figure_height);
    let lim = quantile(s.dz.iter().map(|v| v.abs()), 0.99).unwrap_or(1.0).max(1e-3);
    Ok(draw_png(path, size, |root| {
        let (map_area, bar_area) = root.split_horizontally(size.0 - 130);
        let (mut chart, e) = plan_chart(
            &map_area,
            "DEM of difference (post - pre)",
            s.grid.extent(),
            &xdesc,
            &ydesc,
        )?;
        draw_raster(&chart, e, |x, y| {
            let v = sample(&s.grid, &s.dz, x, y)?;
            Some(if v.is_finite() { diverging((v + lim) / (2.0 * lim)) } else { NODATA })
        })?;
        draw_zones(&mut chart, &s.zones, ZoneKind::Scar, SCAR_COLOUR, "scar (significant loss)")?;
        draw_zones(
            &mut chart,
            &s.zones,
            ZoneKind::Deposit,
            DEPOSIT_COLOUR,
            "deposit (significant gain)",
        )?;
        map_furniture(&mut chart, e)?;
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        colour_bar(&bar_area, -lim, lim, "dz = z_post - z_pre (m)", diverging)
    })?)
}

/// A hazard map: `values` on its grid through `transform` (cells where it gives `None`
/// are left blank), with the zones' outlines when there is a survey.
fn hazard_figure(
    config: &Config,
    data: &Data,
    map: &HazardMap,
    (title, label): (&str, &str),
    values: &[f64],
    path: &Path,
) -> Result<(), Error> {
    let (xdesc, ydesc) = plan_axes(&crs_label(data));
    let size = (config.figure_width, config.figure_height);
    let finite = || values.iter().copied().filter(|v| v.is_finite());
    let lo = finite().fold(f64::INFINITY, f64::min);
    let hi = finite().fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let span = if hi > lo { hi - lo } else { 1.0 };
    Ok(draw_png(path, size, |root| {
        let (map_area, bar_area) = root.split_horizontally(size.0 - 130);
        let (mut chart, e) = plan_chart(&map_area, title, map.grid.extent(), &xdesc, &ydesc)?;
        draw_raster(&chart, e, |x, y| {
            let v = sample(&map.grid, values, x, y)?;
            v.is_finite().then(|| viridis((v - lo) / span))
        })?;
        if let Some(s) = &data.survey {
            draw_zones(&mut chart, &s.zones, ZoneKind::Scar, SCAR_COLOUR, "scar")?;
            draw_zones(
                &mut chart,
                &s.zones,
                ZoneKind::Deposit,
                DEPOSIT_COLOUR,
                "surveyed deposit",
            )?;
            legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }
        map_furniture(&mut chart, e)?;
        colour_bar(&bar_area, lo, hi, label, viridis)
    })?)
}

fn deposit_figure(
    config: &Config,
    s: &Survey,
    map: &ThicknessMap,
    data: &Data,
    path: &Path,
) -> Result<(), Error> {
    let size = (config.figure_width, config.figure_height);
    let g = s.grid;
    let surveyed = &map.surveyed;
    let hi =
        quantile(surveyed.iter().chain(map.simulated.iter()).copied().filter(|v| *v > 0.0), 0.99)
            .unwrap_or(1.0);
    // Extent: both deposits, the scar and the final blocks, with a margin.
    let mut ext = [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
    let mut grow = |x: f64, y: f64| {
        ext = [ext[0].min(x), ext[1].min(y), ext[2].max(x), ext[3].max(y)];
    };
    for r in 0..g.ny {
        for c in 0..g.nx {
            let k = g.index(r, c);
            if s.class[k] != 0 || map.simulated[k] > 0.0 {
                let (x, y) = g.centre(r, c);
                grow(x, y);
            }
        }
    }
    if !ext[0].is_finite() {
        ext = g.extent();
    }
    let pad = 0.08 * (ext[2] - ext[0]).max(ext[3] - ext[1]) + 2.0 * g.cell;
    let ext = [ext[0] - pad, ext[1] - pad, ext[2] + pad, ext[3] + pad];
    let fb = &data.final_blocks;
    // Two panels side by side: as tall as the extent needs, so that a wide deposit leaves
    // no empty band below the maps.
    let size = (size.0, plan_height((size.0 - 130) / 2, ext, size.1));
    Ok(draw_png(path, size, |root| {
        let (maps, bar_area) = root.split_horizontally(size.0 - 130);
        let panels = maps.split_evenly((1, 2));
        let sources = [
            ("Surveyed deposit thickness", surveyed),
            ("Simulated deposit thickness", &map.simulated),
        ];
        for (panel, (p, (title, values))) in panels.iter().zip(sources).enumerate() {
            let (xdesc, ydesc) = plan_axes(&crs_label(data));
            let (mut chart, e) = plan_chart(p, title, ext, &xdesc, &ydesc)?;
            draw_raster(&chart, e, |x, y| {
                let k = g.cell_of(x, y).map(|(r, c)| g.index(r, c))?;
                if values[k] > 0.0 {
                    Some(viridis(values[k] / hi))
                } else if s.class[k] == CELL_SCAR {
                    Some(RGBColor(245, 222, 222))
                } else if s.dz[k].is_finite() {
                    None
                } else {
                    Some(NODATA)
                }
            })?;
            draw_zones(&mut chart, &s.zones, ZoneKind::Scar, SCAR_COLOUR, "scar outline")?;
            draw_zones(
                &mut chart,
                &s.zones,
                ZoneKind::Deposit,
                DEPOSIT_COLOUR,
                "surveyed deposit outline",
            )?;
            if panel == 1 {
                let pts: Vec<(f64, f64)> = (0..fb.len())
                    .filter(|&i| map.deposited[i])
                    .map(|i| (fb.x[i], fb.y[i]))
                    .collect();
                tryp!(chart.draw_series(pts.iter().map(|p| Circle::new(*p, 2, BLACK.filled()))))
                    .label("block centres")
                    .legend(|(x, y)| Circle::new((x + 12, y), 3, BLACK.filled()));
            }
            map_furniture(&mut chart, e)?;
            legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }
        colour_bar(&bar_area, 0.0, hi, "deposit thickness (m)", viridis)
    })?)
}

/// Scale energies to a readable unit.
fn energy_unit(max: f64) -> (f64, &'static str) {
    let m = max.abs();
    for (s, u) in [(1e12, "TJ"), (1e9, "GJ"), (1e6, "MJ"), (1e3, "kJ")] {
        if m >= s {
            return (s, u);
        }
    }
    (1.0, "J")
}

/// Stacked time-series panels, each `(title, values, colour)`.
fn energy_panels(
    config: &Config,
    path: &Path,
    title: &str,
    time: &[f64],
    panels: &[(&str, &[f64], RGBColor)],
) -> Result<(), Error> {
    let size = (config.figure_width, config.figure_height);
    let t0 = time.first().copied().unwrap_or(0.0);
    let t1 = time.last().copied().unwrap_or(1.0).max(t0 + 1e-9);
    Ok(draw_png(path, size, |root| {
        let root = tryp!(root.titled(title, (FONT, 26)));
        let areas = root.split_evenly((panels.len(), 1));
        for (area, (name, values, colour)) in areas.iter().zip(panels) {
            let fin = values.iter().copied().filter(|v| v.is_finite());
            let (lo, hi) =
                fin.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
            let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
            let (scale, unit) = energy_unit(lo.abs().max(hi.abs()));
            let (lo, hi) = (lo / scale, hi / scale);
            let pad = ((hi - lo) * 0.05).max(hi.abs() * 1e-6).max(1e-12);
            let mut chart = tryp!(
                ChartBuilder::on(area)
                    .caption(*name, (FONT, 18))
                    .margin(8)
                    .margin_right(28)
                    .x_label_area_size(40)
                    .y_label_area_size(90)
                    .build_cartesian_2d(t0..t1, (lo - pad)..(hi + pad))
            );
            tryp!(
                chart
                    .configure_mesh()
                    .x_desc("time (s)")
                    .y_desc(format!("energy ({unit})"))
                    .y_labels(5)
                    .y_label_formatter(&|v| short(*v))
                    .light_line_style(RGBColor(235, 235, 235))
                    .label_style((FONT, 13))
                    .axis_desc_style((FONT, 15))
                    .draw()
            );
            let pts = time
                .iter()
                .zip(values.iter())
                .filter(|(_, v)| v.is_finite())
                .map(|(t, v)| (*t, v / scale));
            tryp!(chart.draw_series(LineSeries::new(pts, colour.stroke_width(2))));
        }
        Ok(())
    })?)
}

/// Volume per metre along the flow: each (distance, volume) falls in the bin of width
/// `width` that holds it, the first bin starting at `start`; bins outside `0..n` are
/// dropped. Returns the `n` bins' volumes divided by `width` (m³/m), so their integral
/// (sum × width) is the volume that fell inside.
pub fn along_profile(
    points: impl Iterator<Item = (f64, f64)>,
    start: f64,
    width: f64,
    n: usize,
) -> Vec<f64> {
    let mut bins = vec![0.0; n];
    for (d, v) in points {
        let k = ((d - start) / width).floor();
        if k >= 0.0 && (k as usize) < n {
            bins[k as usize] += v;
        }
    }
    bins.iter_mut().for_each(|b| *b /= width);
    bins
}

/// The deposit's volume along the flow: surveyed (the deposit cells' thickness × area),
/// simulated (the bulked thickness map's cells) and, with two size classes or more, each
/// class's deposited blocks (bulked volume at their centres).
fn along_flow_figure(
    config: &Config,
    data: &Data,
    map: &ThicknessMap,
    section: &Section,
    path: &Path,
) -> Result<(), Error> {
    let g = &map.grid;
    let area = g.cell_area();
    let cells = |values: &'_ [f64]| -> Vec<(f64, f64)> {
        let mut v = Vec::new();
        for r in 0..g.ny {
            for c in 0..g.nx {
                let t = values[g.index(r, c)];
                if t > 0.0 && t.is_finite() {
                    let (x, y) = g.centre(r, c);
                    v.push((section.along(x, y), t * area));
                }
            }
        }
        v
    };
    let surveyed = cells(&map.surveyed);
    let simulated = cells(&map.simulated);
    let fin = &data.final_blocks;
    let mut classes: Vec<u32> = fin.class.clone();
    classes.sort_unstable();
    classes.dedup();
    let per_class: Vec<(u32, Vec<(f64, f64)>)> = if classes.len() < 2 {
        Vec::new()
    } else {
        classes
            .iter()
            .map(|&k| {
                let pts = (0..fin.len())
                    .filter(|&i| fin.class[i] == k && map.deposited[i])
                    .map(|i| {
                        (section.along(fin.x[i], fin.y[i]), fin.volume(i) * config.bulking_factor)
                    })
                    .collect();
                (k, pts)
            })
            .collect()
    };
    let all = surveyed.iter().chain(&simulated).chain(per_class.iter().flat_map(|(_, p)| p));
    let (lo, hi) =
        all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (d, _)| (a.min(*d), b.max(*d)));
    let width = 2.0 * g.cell;
    let (start, n) = if lo.is_finite() {
        let start = (lo / width).floor() * width;
        (start, (((hi - start) / width).floor() as usize + 1).max(1))
    } else {
        (0.0, 1)
    };
    let profile = |pts: &[(f64, f64)]| along_profile(pts.iter().copied(), start, width, n);
    let mut series: Vec<(String, Vec<f64>, RGBColor, u32)> = vec![
        ("surveyed deposit".into(), profile(&surveyed), RGBColor(20, 20, 20), 3),
        ("simulated deposit (bulked)".into(), profile(&simulated), RGBColor(31, 119, 180), 3),
    ];
    const CLASS_COLOURS: [RGBColor; 4] = [
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
    ];
    for (j, (k, pts)) in per_class.iter().enumerate() {
        series.push((
            format!("simulated, size class {k} (blocks' centres)"),
            profile(pts),
            CLASS_COLOURS[j % CLASS_COLOURS.len()],
            1,
        ));
    }
    let top = series.iter().flat_map(|s| s.1.iter().copied()).fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.08 } else { 1.0 };
    let x0 = start;
    let x1 = start + width * n as f64;
    let size = (config.figure_width, config.figure_height);
    Ok(draw_png(path, size, |root| {
        let mut chart = tryp!(
            ChartBuilder::on(root)
                .caption("Deposit volume along the flow", (FONT, 26))
                .margin(12)
                .margin_right(28)
                .x_label_area_size(50)
                .y_label_area_size(90)
                .build_cartesian_2d(x0..x1, 0.0..top)
        );
        tryp!(
            chart
                .configure_mesh()
                .x_desc(section.label)
                .y_desc(format!(
                    "volume per metre along the flow (m³/m), bins of {} m",
                    short(width)
                ))
                .y_label_formatter(&|v| short(*v))
                .light_line_style(RGBColor(235, 235, 235))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 16))
                .draw()
        );
        for (label, values, colour, w) in &series {
            let pts: Vec<(f64, f64)> = values
                .iter()
                .enumerate()
                .map(|(k, v)| (start + (k as f64 + 0.5) * width, *v))
                .collect();
            let style = colour.stroke_width(*w);
            let colour = *colour;
            tryp!(chart.draw_series(LineSeries::new(pts, style))).label(label.as_str()).legend(
                move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3)),
            );
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    })?)
}

/// A ground profile of the section figure: points (distance, elevation), colour, label.
type Profile = (Vec<(f64, f64)>, RGBColor, &'static str);

/// The vertical plane of the section figure: an origin, a unit horizontal direction, and
/// the axis label.
pub struct Section {
    origin: [f64; 2],
    dir: [f64; 2],
    pub(crate) label: &'static str,
}

impl Section {
    /// Along the flow (the scar's crown towards the deposit) when the survey gives it,
    /// else along the blocks' mean horizontal displacement, else west to east.
    pub fn of(data: &Data, map: Option<&ThicknessMap>) -> Section {
        if let Some(f) = map.and_then(|m| crate::metrics::flow_of(data, m)) {
            return Section {
                origin: [f.crown[0], f.crown[1]],
                dir: f.dir,
                label: "distance along the flow from the scar's crown (m)",
            };
        }
        let tr = &data.trajectories;
        let (mut o, mut d, mut n) = ([0.0; 2], [0.0; 2], 0.0);
        for (_, r) in tr.per_block() {
            let (a, b) = (r.start, r.end - 1);
            o = [o[0] + tr.x[a], o[1] + tr.y[a]];
            d = [d[0] + tr.x[b] - tr.x[a], d[1] + tr.y[b] - tr.y[a]];
            n += 1.0;
        }
        let len = d[0].hypot(d[1]);
        if n > 0.0 && len > 1e-9 * n {
            return Section {
                origin: [o[0] / n, o[1] / n],
                dir: [d[0] / len, d[1] / len],
                label: "distance along the blocks' mean displacement (m)",
            };
        }
        Section { origin: [0.0, 0.0], dir: [1.0, 0.0], label: "easting (m)" }
    }

    pub fn along(&self, x: f64, y: f64) -> f64 {
        (x - self.origin[0]) * self.dir[0] + (y - self.origin[1]) * self.dir[1]
    }
}

fn trajectories_figure(
    config: &Config,
    data: &Data,
    path: &Path,
    section: Option<&Section>,
) -> Result<(), Error> {
    // The plan view without a section, the section figure with one.
    let side = section.is_some();
    let size = (config.figure_width, config.figure_height);
    let tr = &data.trajectories;
    let blocks = tr.per_block();
    let n = blocks.len();
    let keep = config.max_trajectories.max(1);
    let chosen: Vec<&(u32, std::ops::Range<usize>)> = if n <= keep {
        blocks.iter().collect()
    } else {
        (0..keep).map(|i| &blocks[i * n / keep]).collect()
    };
    let coord = |i: usize| match section {
        Some(sec) => (sec.along(tr.x[i], tr.y[i]), tr.z[i]),
        None => (tr.x[i], tr.y[i]),
    };
    let mut ext = [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
    for i in 0..tr.x.len() {
        let (x, y) = coord(i);
        ext = [ext[0].min(x), ext[1].min(y), ext[2].max(x), ext[3].max(y)];
    }
    if !side && let Some(s) = &data.survey {
        for z in &s.zones {
            for ring in z.polygons.iter().flatten() {
                for p in ring {
                    ext = [ext[0].min(p[0]), ext[1].min(p[1]), ext[2].max(p[0]), ext[3].max(p[1])];
                }
            }
        }
    }
    if !ext[0].is_finite() {
        ext = [0.0, 0.0, 1.0, 1.0];
    }
    // The section's ground: pre- and post-event profiles under the section line, over
    // the paths' extent along it.
    let mut profiles: Vec<Profile> = Vec::new();
    if let (Some(section), Some(s)) = (section, &data.survey) {
        let step = s.grid.cell.max(1e-3);
        let n = ((ext[2] - ext[0]) / step).ceil().clamp(1.0, 1e5) as usize;
        for (z, colour, label) in [
            (&s.z_pre, RGBColor(120, 120, 120), "pre-event ground"),
            (&s.z_post, RGBColor(140, 86, 75), "post-event ground"),
        ] {
            let pts: Vec<(f64, f64)> = (0..=n)
                .filter_map(|k| {
                    let t = ext[0] + k as f64 * step;
                    let x = section.origin[0] + t * section.dir[0];
                    let y = section.origin[1] + t * section.dir[1];
                    sample(&s.grid, z, x, y).filter(|v| v.is_finite()).map(|v| (t, v))
                })
                .collect();
            for p in &pts {
                ext[1] = ext[1].min(p.1);
                ext[3] = ext[3].max(p.1);
            }
            profiles.push((pts, colour, label));
        }
    }
    let pad = 0.05 * (ext[2] - ext[0]).max(ext[3] - ext[1]).max(1.0);
    let ext = [ext[0] - pad, ext[1] - pad, ext[2] + pad, ext[3] + pad];
    let title = format!(
        "Block trajectories, {} ({} of {} blocks)",
        if side { "section along the flow" } else { "plan view" },
        chosen.len(),
        n
    );
    let t_end = tr.time.iter().copied().fold(0.0, f64::max).max(1e-9);
    Ok(draw_png(path, size, |root| {
        let (map_area, bar_area) = root.split_horizontally(size.0 - 130);
        let ydesc = if side { "elevation (m)" } else { "northing (m)" };
        let (plan_x, _) = plan_axes(&crs_label(data));
        let xdesc = section.map_or(plan_x.as_str(), |s| s.label);
        let (mut chart, e) = plan_chart(&map_area, &title, ext, xdesc, ydesc)?;
        for (pts, colour, label) in &profiles {
            let colour = *colour;
            tryp!(chart.draw_series(std::iter::once(PathElement::new(
                pts.clone(),
                colour.stroke_width(2)
            ))))
            .label(*label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        }
        if !side && let Some(s) = &data.survey {
            // Pre-event elevation in grey as background.
            let (lo, hi) = s
                .z_pre
                .iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
            if lo.is_finite() && hi > lo {
                draw_raster(&chart, e, |x, y| {
                    let v = sample(&s.grid, &s.z_pre, x, y)?;
                    v.is_finite().then(|| {
                        let g = (200.0 + 50.0 * (v - lo) / (hi - lo)) as u8;
                        RGBColor(g, g, g)
                    })
                })?;
            }
            draw_zones(&mut chart, &s.zones, ZoneKind::Scar, SCAR_COLOUR, "scar outline")?;
            draw_zones(
                &mut chart,
                &s.zones,
                ZoneKind::Deposit,
                DEPOSIT_COLOUR,
                "surveyed deposit outline",
            )?;
        }
        // Each path coloured by time along it (viridis: dark = start, yellow = end).
        for (_, r) in &chosen {
            let idx: Vec<usize> = r.clone().collect();
            tryp!(chart.draw_series(idx.windows(2).map(|w| {
                let c = viridis(tr.time[w[1]] / t_end);
                PathElement::new(vec![coord(w[0]), coord(w[1])], c.stroke_width(1))
            })));
        }
        let starts: Vec<(f64, f64)> = chosen.iter().map(|(_, r)| coord(r.start)).collect();
        let ends: Vec<(f64, f64)> = chosen.iter().map(|(_, r)| coord(r.end - 1)).collect();
        tryp!(chart.draw_series(starts.iter().map(|p| Circle::new(*p, 2, BLUE.filled()))))
            .label("initial position")
            .legend(|(x, y)| Circle::new((x + 12, y), 3, BLUE.filled()));
        tryp!(chart.draw_series(ends.iter().map(|p| Circle::new(*p, 2, RED.filled()))))
            .label("last recorded position")
            .legend(|(x, y)| Circle::new((x + 12, y), 3, RED.filled()));
        if !side {
            map_furniture(&mut chart, e)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        colour_bar(&bar_area, 0.0, t_end, "time along the path (s)", viridis)
    })?)
}

/// Draw every figure that the inputs allow into `dir`.
pub fn draw_all(
    config: &Config,
    data: &Data,
    map: Option<&ThicknessMap>,
    hazard: Option<&HazardMap>,
    section: &Section,
    dir: &Path,
) -> Result<Vec<Figure>, Error> {
    let mut figs = Vec::new();
    let mut add = |file: &str, title: &str, caption: &str| {
        let path = dir.join(file);
        figs.push(Figure {
            file: file.into(),
            path: path.clone(),
            title: title.into(),
            caption: caption.into(),
        });
        path
    };
    if let (Some(s), Some(m)) = (&data.survey, map) {
        let p = add(
            "dod.png",
            "DEM of difference",
            "Vertical difference post - pre on the DoD grid (red: loss, blue: gain; grey: no data), with the outlines of the scar and deposit zones found by talus diff. North up; scale bar lower left; coordinates in the surveys' CRS.",
        );
        dod_figure(config, s, &crs_label(data), &p)?;
        let p = add(
            "deposit.png",
            "Surveyed vs simulated deposit",
            "Deposit thickness, same colour scale: left the surveyed thickness (positive dz in the deposit zones), right the block volumes spread over their footprints (with the bulking factor), dots the deposited blocks' centres. Outline: the surveyed deposit (magenta) and the scar (black); pale red: the scar's cells; grey: no data. North up (arrow lower right); scale bar lower left. Thesis Fig. 6.33, made quantitative.",
        );
        deposit_figure(config, s, m, data, &p)?;
        let p = add(
            "deposit_along_flow.png",
            "Deposit volume along the flow",
            "Volume per metre of distance along the flow (from the scar's crown towards the surveyed deposit, as the section figure), in bins of twice the survey's cell: the surveyed deposit (positive dz in the deposit zones × cell area), the simulated one (the bulked thickness map of the deposited blocks) and, with size classes, each class's deposited blocks at their centres. Where the curves part is where the simulated volume lies too early or too far along the path.",
        );
        along_flow_figure(config, data, m, section, &p)?;
    }
    let e = &data.energies;
    let p = add(
        "energy_kinetic.png",
        "Kinetic energy",
        "Total, translational and rotational kinetic energy of all blocks against time (thesis Fig. 6.29).",
    );
    energy_panels(
        config,
        &p,
        "Kinetic energy",
        &e.time,
        &[
            ("total kinetic energy", &e.kinetic, RGBColor(31, 119, 180)),
            ("translational kinetic energy", &e.kinetic_translational, RGBColor(44, 160, 44)),
            ("rotational kinetic energy", &e.kinetic_rotational, RGBColor(214, 39, 40)),
        ],
    )?;
    let p = add(
        "energy_dissipation.png",
        "Dissipated and potential energy",
        "Energy dissipated by the percussions of each step, cumulative dissipation, and potential energy against time (thesis Fig. 6.30).",
    );
    energy_panels(
        config,
        &p,
        "Dissipation and potential energy",
        &e.time,
        &[
            ("dissipated in the step (instantaneous)", &e.dissipated, RGBColor(148, 103, 189)),
            ("cumulative dissipated energy", &e.dissipated_cumulative, RGBColor(140, 86, 75)),
            ("potential energy", &e.potential, RGBColor(255, 127, 14)),
        ],
    )?;
    let p = add(
        "trajectories.png",
        "Trajectories, plan view",
        "Paths of the block centres, coloured by time; blue dots the initial and red dots the last recorded positions. Background: the pre-event elevation in grey (lighter is higher), with the scar and deposit outlines. North up (arrow lower right); scale bar lower left.",
    );
    trajectories_figure(config, data, &p, None)?;
    let p = add(
        "trajectories_side.png",
        "Trajectories, section along the flow",
        "The same paths projected on the vertical plane along the flow (from the scar's crown towards the deposit; without a survey, along the blocks' mean displacement), equal scales, over the pre-event (grey) and post-event (brown) ground profiles on the section line.",
    );
    trajectories_figure(config, data, &p, Some(section))?;
    if let Some(h) = hazard {
        let p = add(
            "hazard_energy.png",
            "Hazard map: maximum kinetic energy",
            "Per cell, the largest translational kinetic energy ½mv² of a block centre over it, log10 of kJ (hazard_max_energy.tif), from the trajectories walked at a quarter cell between samples; the scale spans four decades (lower values at its bottom colour); blank: no block. Outlines: the scar (black) and the surveyed deposit (magenta). North up; scale bar lower left.",
        );
        // Four decades below the largest: a block at rest in its source cell has ~0 kJ.
        let top = h.max_energy.iter().copied().filter(|v| v.is_finite()).fold(0.0, f64::max);
        let floor = if top > 0.0 { top.log10() - 4.0 } else { 0.0 };
        let log: Vec<f64> = h
            .max_energy
            .iter()
            .map(|v| if v.is_finite() { v.max(1e-300).log10().max(floor) } else { f64::NAN })
            .collect();
        hazard_figure(
            config,
            data,
            h,
            ("Maximum kinetic energy", "log10 max energy (kJ)"),
            &log,
            &p,
        )?;
        let p = add(
            "hazard_passes.png",
            "Hazard map: blocks passed",
            "Per cell, how many blocks passed over it (hazard_passes.tif); blank: none. Outlines as above. North up; scale bar lower left.",
        );
        let passes: Vec<f64> =
            h.passes.iter().map(|&n| if n > 0 { f64::from(n) } else { f64::NAN }).collect();
        hazard_figure(config, data, h, ("Blocks passed", "blocks per cell"), &passes, &p)?;
    }
    Ok(figs)
}

#[cfg(test)]
mod along_tests {
    use super::along_profile;

    /// Each volume lands in the bin holding its distance (bins closed on the left), the
    /// bins hold volume per metre, their integral is the volume inside, and volumes
    /// outside the bins are dropped.
    #[test]
    fn the_profile_bins_volume_per_metre() {
        let pts =
            [(0.0, 10.0), (9.999, 5.0), (10.0, 7.0), (25.0, 4.0), (-0.1, 100.0), (30.0, 100.0)];
        let b = along_profile(pts.into_iter(), 0.0, 10.0, 3);
        assert_eq!(b, vec![1.5, 0.7, 0.4]);
        let integral: f64 = b.iter().map(|v| v * 10.0).sum();
        assert!((integral - 26.0).abs() < 1e-12);
        // A shifted start moves the edges.
        assert_eq!(along_profile([(12.0, 6.0)].into_iter(), 5.0, 2.0, 10), {
            let mut v = vec![0.0; 10];
            v[3] = 3.0;
            v
        });
    }
}

#[cfg(test)]
mod map_tests {
    use super::{CAPTION, MARGIN, XLAB, YLAB, plan_height, scale_bar_length};

    /// A wide extent gets a figure just tall enough for equal scales; a tall one keeps the
    /// configured height; never under 300 pixels.
    #[test]
    fn plan_height_fits_the_extent() {
        let frame = 2 * MARGIN + XLAB + CAPTION + 12;
        let pw = 535 - (2 * MARGIN + YLAB);
        let wide = [0.0, 0.0, 400.0, 300.0];
        let h = plan_height(535, wide, 900);
        assert_eq!(h, (pw as f64 * 0.75).ceil() as u32 + frame);
        assert!(h < 900);
        assert_eq!(plan_height(535, [0.0, 0.0, 100.0, 1000.0], 900), 900);
        assert_eq!(plan_height(535, [0.0, 0.0, 1000.0, 1.0], 900), 300);
    }

    #[test]
    fn scale_bars_are_round_and_at_most_a_quarter_of_the_map() {
        assert_eq!(scale_bar_length(560.0), 100.0);
        assert_eq!(scale_bar_length(1000.0), 200.0);
        assert_eq!(scale_bar_length(200.0), 50.0);
        assert_eq!(scale_bar_length(39.0), 5.0);
        assert_eq!(scale_bar_length(8000.0), 2000.0);
    }
}
