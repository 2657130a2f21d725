//! Airborne LiDAR sampling of a surface.
//!
//! Flight lines run east-west, one per swath (south to north, alternating direction).
//! Each 1 m × 1 m ground cell of a swath receives Poisson(ρ · a) pulses at uniform
//! positions, where ρ is the survey's pulse density and a the area factor: with
//! `surface_area` sampling a = min(√(1 + |∇z|²), max_area_factor), i.e. density per unit
//! of 3D surface so the steep cliff face is covered (as the oblique helicopter scan and
//! the overlapping airborne lines see it); with `horizontal`, a = 1. Each pulse returns
//! from the ground (class 2) or, over vegetation, from the canopy and possibly from
//! inside it and from the ground (classes 3/4/5 by height above ground: < 0.5 m, < 2 m,
//! taller). Measured coordinates get N(0, σ_xy) per axis (one draw per pulse: it is the
//! trajectory error) and N(0, σ_z) per return, plus the survey's rigid misregistration.
//! GPS time grows along each line at the flight speed; points are written in time order.
//!
//! Every flight line has its own ChaCha8 stream seeded from (seed, survey, line), so lines
//! are generated in parallel and the output does not depend on the thread count.

use crate::config::{SteepSampling, Survey};
use crate::noise::sub_seed;
use crate::site::Site;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, Poisson};

/// Which epoch a survey sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Epoch {
    Pre,
    Post,
}

/// One LiDAR return in CRS coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Return {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub gps_time: f64,
    pub intensity: u16,
    pub return_number: u8,
    pub number_of_returns: u8,
    pub classification: u8,
    pub scan_angle: f32,
    pub flight_line: u16,
}

/// Sampling cell size, m.
const CELL: f64 = 1.0;
/// Time to turn between flight lines, s.
const TURN: f64 = 90.0;

/// Number of flight lines of a survey over the site.
pub fn line_count(site: &Site, survey: &Survey) -> usize {
    (site.config.extent[1] / survey.swath).ceil().max(1.0) as usize
}

fn surface(site: &Site, epoch: Epoch, x: f64, y: f64) -> f64 {
    match epoch {
        Epoch::Pre => site.z_pre(x, y),
        Epoch::Post => site.z_post(x, y),
    }
}

fn area_factor(site: &Site, survey: &Survey, epoch: Epoch, x: f64, y: f64) -> f64 {
    match survey.steep_sampling {
        SteepSampling::Horizontal => 1.0,
        SteepSampling::SurfaceArea => {
            let e = 0.5 * CELL;
            let gx = (surface(site, epoch, x + e, y) - surface(site, epoch, x - e, y)) / (2.0 * e);
            let gy = (surface(site, epoch, x, y + e) - surface(site, epoch, x, y - e)) / (2.0 * e);
            (1.0 + gx * gx + gy * gy).sqrt().min(survey.max_area_factor)
        }
    }
}

fn vegetation_class(height: f64) -> u8 {
    if height < 0.5 {
        3
    } else if height < 2.0 {
        4
    } else {
        5
    }
}

/// All returns of flight line `line` of a survey, in GPS-time order.
pub fn flight_line(site: &Site, survey: &Survey, epoch: Epoch, line: usize) -> Vec<Return> {
    let c = &site.config;
    let label = match epoch {
        Epoch::Pre => 1_000_000u64,
        Epoch::Post => 2_000_000u64,
    } + line as u64;
    let mut rng = ChaCha8Rng::seed_from_u64(sub_seed(c.seed, label));
    let density = survey.density * c.scale;
    let y_lo = line as f64 * survey.swath;
    let y_hi = ((line + 1) as f64 * survey.swath).min(c.extent[1]);
    let y_mid = 0.5 * (y_lo + y_hi);
    let eastward = line.is_multiple_of(2);
    let line_time = c.extent[0] / survey.speed;
    let t0 = survey.gps_time_start + line as f64 * (line_time + TURN);
    let nx = (c.extent[0] / CELL).ceil() as usize;
    let row0 = (y_lo / CELL).floor() as usize;
    let row1 = ((y_hi / CELL).ceil() as usize).max(row0);
    let sxy = Normal::new(0.0, survey.sigma_xy.max(1e-12)).expect("finite sigma");
    let sz = Normal::new(0.0, survey.sigma_z.max(1e-12)).expect("finite sigma");
    let [mx, my, mz] = survey.misregistration;
    let (ox, oy) = (c.origin[0], c.origin[1]);
    let penetration = c.vegetation.ground_penetration;
    let mut out =
        Vec::with_capacity(((row1 - row0) as f64 * nx as f64 * density * 1.4) as usize + 16);
    for k in 0..nx {
        let i = if eastward { k } else { nx - 1 - k };
        let x0 = i as f64 * CELL;
        for j in row0..row1 {
            let y0 = j as f64 * CELL;
            let (cx, cy) = (x0 + 0.5 * CELL, y0 + 0.5 * CELL);
            if cx > c.extent[0] || cy > c.extent[1] {
                continue;
            }
            let lambda = density * CELL * CELL * area_factor(site, survey, epoch, cx, cy);
            let n = Poisson::new(lambda).map(|p| p.sample(&mut rng) as usize).unwrap_or(0);
            for _ in 0..n {
                let x = x0 + rng.random::<f64>() * CELL;
                let y = y0 + rng.random::<f64>() * CELL;
                let zg = surface(site, epoch, x, y);
                let along = if eastward { x } else { c.extent[0] - x };
                let gps_time = t0 + along / survey.speed + rng.random::<f64>() * 1e-4;
                let scan_angle = ((y - y_mid) / survey.flying_height).atan().to_degrees() as f32;
                let ex = ox + x + sxy.sample(&mut rng) + mx;
                let ey = oy + y + sxy.sample(&mut rng) + my;
                let hv = site.canopy(x, y, epoch == Epoch::Post);
                // (height above ground, class) of each return of the pulse, first to last.
                let mut returns: [(f64, u8); 3] = [(0.0, 2); 3];
                let count = if hv > 0.0 {
                    returns[0] = (hv * rng.random_range(0.75..=1.0), vegetation_class(hv));
                    if rng.random_bool(penetration) {
                        if rng.random_bool(0.4) {
                            let h = hv * rng.random_range(0.1..0.6);
                            returns[1] = (h, vegetation_class(h));
                            3
                        } else {
                            2
                        }
                    } else {
                        1
                    }
                } else {
                    1
                };
                if count > 1 {
                    returns[count - 1] = (0.0, 2);
                }
                for (r, &(h, class)) in returns[..count].iter().enumerate() {
                    let intensity = if class == 2 {
                        rng.random_range(180..420)
                    } else {
                        rng.random_range(40..200)
                    };
                    out.push(Return {
                        x: ex,
                        y: ey,
                        z: zg + h + sz.sample(&mut rng) + mz,
                        gps_time,
                        intensity,
                        return_number: (r + 1) as u8,
                        number_of_returns: count as u8,
                        classification: class,
                        scan_angle,
                        flight_line: (line + 1) as u16,
                    });
                }
            }
        }
    }
    // Stable: the returns of one pulse stay together and in order.
    out.sort_by(|a, b| a.gps_time.total_cmp(&b.gps_time));
    out
}
