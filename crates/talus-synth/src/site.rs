//! The site as exact 2.5D surfaces z = f(x, y) in the local frame (x east along the
//! cliff, y north uphill; metres from the site's south-west corner).
//!
//! Across-slope profile, with t = y - y_foot(x) and softplus corners of radius r
//! (sp(t) = r ln(1 + e^{t/r})):
//!
//! ```text
//! P(t; θ, w) = tan β · t + (tan θ - tan β) sp(t) - (tan θ - tan γ) sp(t - w)
//! ```
//!
//! valley slope β below the foot, cliff slope θ over a width w = H / tan θ, plateau slope γ
//! above. Two scar shapes cut into it (`[synth.scar] shape`):
//!
//! **Wedge** (the default). The scar retreats the cliff top by D(x) = D_max (1 - u⁴)²,
//! u = (x - x_c)/(W/2), with the foot fixed. The deficit z_pre - z_post before roughness is
//!
//! ```text
//! Δ(t) = max(0, (tan θ - tan θ') q(t) - (tan θ - tan γ) sp(t - w) + (tan θ' - tan γ) sp(t - w - D))
//! ```
//!
//! with q the C¹ ramp (0 for t ≤ 0, t²/4r, then t - r): exactly zero below the foot (so
//! scar and deposit never overlap), largest near the old cliff top, and vanishing beyond
//! the crown at t = w + D because the post-event face slope is
//! tan θ' = (H + D tan γ - r tan θ)/(w + D - r). Inside the scar the fresh surface gets
//! its own roughness. D_max is solved so that the deficit integrated on the truth grid
//! equals the configured volume. A wedge 0-54 m thick holds few whole layers of tall
//! blocks: the thesis's blocks fill at most 70 % / 74 % of it.
//!
//! **Pillar** (the shipped site). Before the event a flat-topped prow with a vertical
//! front stood on the upper cliff; it fell away whole and left a flat bench and a vertical
//! back wall. The void is the box B = [x₀, x₁) × [y₀, y₁) of n_x × n_y whole truth cells
//! (Δ = truth_cell; width W = n_x Δ ≈ `width` along the cliff, depth D = n_y Δ ≈ `depth`
//! across it, centred on `center_x`):
//!
//! ```text
//! z_pre = z_top,  z_post = z_top - h   inside B;   both the intact surface outside B
//! h = V / (W D)                        (so Σ deficit · Δ² = V exactly)
//! S(y₀ + D) - S(y₀) = h                (y₀ on the upper branch, rounded to a cell edge)
//! z_top = S(y₁)
//! ```
//!
//! with S the smooth intact surface (no relief) across the cliff at x_c = (x₀ + x₁)/2: the
//! bench is flush with the cliff in front of it and the prow's top with the plateau behind
//! the crown (at x_c; elsewhere relief, the foot's wander and the downstream gradient leave
//! steps of a few metres). Walls are steps on cell edges, so every truth cell of B is a
//! full column of height h and every other cell has none; the top and the bench are
//! horizontal planes (no roughness: `roughness` is the wedge's). The box stays behind the
//! foot line everywhere (checked), so scar and deposit never overlap.
//!
//! Why a box, and why 64 m rather than a ~128 m slab: upright blocks fill a void only in
//! whole rows, columns and layers, and on cell-constant columns a void's walls sit on cell
//! edges. With V = 8 × 10⁵ m³ and the thesis's two blocks, a box fills ≥ 90 % with
//! 10.935 × 9.636 × 15.775 m and ≥ 96 % with 8.852 × 7.801 × 12.771 m only when its three
//! edges are near common multiples of both sizes. The shipped box, 80 × 156.25 × 64 m on
//! 1.25 m cells, holds 7 × 16 × 4 = 448 large blocks (76.5 × 154.2 × 63.1 m, 93.1 %) and
//! 9 × 20 × 5 = 900 small ones (79.67 × 156.02 × 63.86 m, 99.2 %). A slab ~128 m tall
//! (10 small layers = 127.71 m, 8 large = 126.2 m) has 6250 m² of footprint for 8 × 10⁵ m³;
//! 5 × 18 small footprints need 44.26 × 140.42 = 6215 m², which no rectangle of whole
//! 1, 1.25, 1.5, 2 or 2.5 m cells contains within that area, and every smaller
//! arrangement misses a threshold (a search over every box ≥ 100 m tall of volume V on
//! those cells, 2 cm of play per edge, finds at best 0.898 / 0.970 on 1-2.5 m cells and
//! 0.931 / 0.937 on 2 m cells). The thesis's own height-difference map spans 0-60 m
//! (its Fig. 6.25).
//!
//! The deposit lies downslope of the foot (the break in slope): with s = y_foot(x) - y
//! and σ = s/L, thickness T = h · smoothstep(σ/0.25) · (1-σ)^{1/2} · (1 - (dx/b(σ))²),
//! half-width b(σ) = b₀ (1-σ)^p: an arrowhead pointing downslope. Its length L follows
//! the travel-angle rule: the line from the scar crown at angle α meets the valley floor
//! at the tip. h is solved so that the deposit volume is the scar volume × bulking.

use crate::Error;
use crate::config::{Config, ScarShape};
use crate::noise::{Fbm, sub_seed};

/// Deficit or thickness below which a cell does not count as scar or deposit, m.
pub const MASK_THRESHOLD: f64 = 0.01;

/// The generated site with its solved parameters.
#[derive(Debug, Clone)]
pub struct Site {
    pub config: Config,
    relief: Fbm,
    scar_relief: Fbm,
    deposit_relief: Fbm,
    wander: Fbm,
    veg_mask: Fbm,
    veg_height: Fbm,
    tan_valley: f64,
    tan_cliff: f64,
    tan_plateau: f64,
    tan_bank: f64,
    /// Horizontal width of the intact cliff face, m.
    pub cliff_width: f64,
    /// Scar centre x (local), m.
    pub scar_x: f64,
    /// Largest retreat of the cliff top, m (solved; `pillar`: the depth from the old front
    /// face to the new back wall).
    pub retreat_max: f64,
    /// The pillar's box (`pillar` scars only).
    pub pillar: Option<Pillar>,
    /// Deposit height scale h, m (solved).
    pub deposit_height: f64,
    /// Runout length from the foot to the deposit tip, m.
    pub runout: f64,
    /// Travel angle of the runout rule, degrees.
    pub travel_angle: f64,
    veg_threshold: f64,
}

/// The void of a `pillar` scar: a box of whole truth cells in the local frame.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Pillar {
    /// West and east walls, m.
    pub x0: f64,
    pub x1: f64,
    /// Old front face (south) and new back wall (north), m.
    pub y0: f64,
    pub y1: f64,
    /// Elevation of the pillar's flat top (the pre-event surface over the box), m.
    pub top: f64,
    /// Elevation of the bench it leaves (the post-event surface over the box), m.
    pub bench: f64,
}

impl Pillar {
    /// Whether (x, y) lies in the box (half-open: west and south walls belong to it).
    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x0 && x < self.x1 && y >= self.y0 && y < self.y1
    }

    /// Height of the void, m.
    pub fn height(&self) -> f64 {
        self.top - self.bench
    }
}

fn softplus(t: f64, r: f64) -> f64 {
    let u = t / r;
    if u > 30.0 {
        t
    } else if u < -30.0 {
        0.0
    } else {
        r * u.exp().ln_1p()
    }
}

/// C¹ ramp that is exactly 0 below the foot: 0, t²/4r, t - r.
fn foot_ramp(t: f64, r: f64) -> f64 {
    if t <= 0.0 {
        0.0
    } else if t < 2.0 * r {
        t * t / (4.0 * r)
    } else {
        t - r
    }
}

fn smoothstep(u: f64) -> f64 {
    let u = u.clamp(0.0, 1.0);
    u * u * (3.0 - 2.0 * u)
}

/// The truth grid: cell centres x = (i + ½) cell, y = (j + ½) cell in the local frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    pub cell: f64,
    pub nx: usize,
    pub ny: usize,
}

impl Grid {
    pub fn for_config(c: &Config) -> Grid {
        Grid {
            cell: c.truth_cell,
            nx: (c.extent[0] / c.truth_cell).floor() as usize,
            ny: (c.extent[1] / c.truth_cell).floor() as usize,
        }
    }
    pub fn x(&self, i: usize) -> f64 {
        (i as f64 + 0.5) * self.cell
    }
    pub fn y(&self, j: usize) -> f64 {
        (j as f64 + 0.5) * self.cell
    }
    /// Column range whose centres lie in [x0, x1].
    fn cols(&self, x0: f64, x1: f64) -> std::ops::Range<usize> {
        let a = ((x0 / self.cell - 0.5).ceil().max(0.0)) as usize;
        let b = ((x1 / self.cell - 0.5).floor() + 1.0).clamp(0.0, self.nx as f64) as usize;
        a.min(b)..b
    }
    fn rows(&self, y0: f64, y1: f64) -> std::ops::Range<usize> {
        let a = ((y0 / self.cell - 0.5).ceil().max(0.0)) as usize;
        let b = ((y1 / self.cell - 0.5).floor() + 1.0).clamp(0.0, self.ny as f64) as usize;
        a.min(b)..b
    }
}

/// Fixed-point iteration p ← p · target / f(p) for a quantity about proportional to p.
fn solve_proportional(mut p: f64, target: f64, f: impl Fn(f64) -> f64) -> f64 {
    for _ in 0..40 {
        let v = f(p);
        if v.is_nan() || v <= 0.0 {
            break;
        }
        let next = p * target / v;
        if ((next - p) / p).abs() < 1e-12 {
            return next;
        }
        p = next;
    }
    p
}

impl Site {
    /// Validate the configuration, build the fields and solve the scar retreat, runout
    /// and deposit height. Every "impossible configuration" error is raised here, before
    /// anything is written.
    pub fn new(config: &Config) -> Result<Site, Error> {
        config.validate()?;
        let c = config.clone();
        let t = &c.terrain;
        let seed = c.seed;
        let tan = |deg: f64| deg.to_radians().tan();
        let short = 2.0;
        let mut site = Site {
            relief: Fbm::new(
                sub_seed(seed, 1),
                t.relief_amplitude,
                t.relief_wavelength,
                short,
                t.relief_hurst,
            ),
            scar_relief: Fbm::new(
                sub_seed(seed, 2),
                t.relief_amplitude * c.scar.roughness * 0.5,
                t.relief_wavelength / 8.0,
                short,
                t.relief_hurst,
            ),
            deposit_relief: Fbm::new(sub_seed(seed, 3), c.deposit.roughness, 32.0, short, 0.5),
            wander: Fbm::new(sub_seed(seed, 4), 0.5 * t.foot_wander, 256.0, 32.0, 0.7),
            veg_mask: Fbm::new(sub_seed(seed, 5), 1.0, 128.0, 8.0, 0.6),
            veg_height: Fbm::new(sub_seed(seed, 6), 1.0, 64.0, 8.0, 0.5),
            tan_valley: tan(t.valley_slope),
            tan_cliff: tan(t.cliff_slope),
            tan_plateau: tan(t.plateau_slope),
            tan_bank: tan(t.bank_slope),
            cliff_width: t.cliff_height / tan(t.cliff_slope),
            scar_x: c.scar_center_x(),
            retreat_max: 0.0,
            pillar: None,
            deposit_height: 0.0,
            runout: 0.0,
            travel_angle: 0.0,
            veg_threshold: 0.0,
            config: c.clone(),
        };
        // Vegetation threshold: the mask noise's quantile for the requested cover,
        // estimated on a fixed lattice (the noise has roughly unit spread).
        site.veg_threshold = {
            let mut v: Vec<f64> = (0..64 * 64)
                .map(|k| site.veg_mask.at((k % 64) as f64 * 9.1, (k / 64) as f64 * 7.3))
                .collect();
            v.sort_by(f64::total_cmp);
            let q = ((1.0 - c.vegetation.cover) * (v.len() - 1) as f64).round() as usize;
            if c.vegetation.cover <= 0.0 { f64::INFINITY } else { v[q.min(v.len() - 1)] }
        };

        let grid = Grid::for_config(&c);
        let h = t.cliff_height;
        // (height of the crown above the foot, its distance behind the foot), m.
        let (crown_h, crown_dist) = match c.scar.shape {
            ScarShape::Wedge => {
                site.solve_wedge(&grid)?;
                (h + site.tan_plateau * site.retreat_max, site.cliff_width + site.retreat_max)
            }
            ScarShape::Pillar => {
                let p = site.solve_pillar(&grid)?;
                site.pillar = Some(p);
                site.retreat_max = p.y1 - p.y0;
                let xc = 0.5 * (p.x0 + p.x1);
                let foot = site.foot_y(xc);
                (p.top - site.base_pre(xc, foot), p.y1 - foot)
            }
        };

        // Runout: the crown (top of the scar) sees the deposit tip at the travel angle.
        let alpha = match c.deposit.travel_angle {
            Some(a) => a,
            None => (10f64.powf(0.62419 - 0.15666 * c.scar.volume.log10())).atan().to_degrees(),
        };
        site.travel_angle = alpha;
        let tan_a = alpha.to_radians().tan();
        if tan_a <= site.tan_valley {
            return Err(Error::Config(format!(
                "travel angle {alpha:.1}° is not steeper than the valley slope {}°: the deposit would never stop",
                t.valley_slope
            )));
        }
        site.runout = (crown_h - tan_a * crown_dist) / (tan_a - site.tan_valley);
        let foot_min = t.foot_y - t.foot_wander * 1.5;
        let river_edge = t.river_y + t.river_width;
        if site.runout.is_nan() || site.runout <= 10.0 {
            return Err(Error::Config(format!(
                "travel angle {alpha:.1}° is so steep that the deposit would stay on the cliff (runout {:.0} m)",
                site.runout
            )));
        }
        if foot_min - site.runout < river_edge {
            return Err(Error::Config(format!(
                "the deposit's runout ({:.0} m from the cliff foot at travel angle {alpha:.1}°) reaches the river at \
                 y = {} m: move terrain.foot_y north, raise deposit.travel_angle or reduce scar.volume",
                site.runout, t.river_y
            )));
        }

        // Deposit height: volume = bulking × the scar volume actually on the grid.
        let scar_v = site.scar_volume_on(&grid);
        let target = c.deposit.bulking * scar_v;
        let unit = {
            let mut s = site.clone();
            s.deposit_height = 1.0;
            s.deposit_volume_on(&grid)
        };
        if unit.is_nan() || unit <= 0.0 {
            return Err(Error::Config(
                "the deposit footprint is empty on the truth grid (truth_cell too large?)".into(),
            ));
        }
        site.deposit_height = solve_proportional(target / unit, target, |hh| {
            let mut s = site.clone();
            s.deposit_height = hh;
            s.deposit_volume_on(&grid)
        });
        Ok(site)
    }

    /// Wedge: solve the largest retreat of the cliff top for the configured volume.
    fn solve_wedge(&mut self, grid: &Grid) -> Result<(), Error> {
        let c = self.config.clone();
        let t = &c.terrain;
        let h = t.cliff_height;
        let site = self;
        // The analytic first guess D0 from V ≈ ½ D (H - w tan γ) ∫(1-u⁴)² (W/2) du.
        let per_m = 0.5 * (h - site.cliff_width * site.tan_plateau);
        let d0 = c.scar.volume / (per_m * c.scar.width * 0.711_111);
        let foot_max = t.foot_y + t.foot_wander * 1.5;
        let room = c.extent[1] - (foot_max + site.cliff_width) - 5.0 * t.corner_radius;
        let too_large = |d: f64| {
            Error::Config(format!(
                "scar of {:.3e} m³ over {} m of cliff is larger than the cliff: the cliff top would retreat {d:.0} m \
                 but the plateau behind it is only {room:.0} m deep in the site (reduce scar.volume, widen scar.width \
                 or extend the site northward)",
                c.scar.volume, c.scar.width
            ))
        };
        if d0.is_nan() || d0 <= 0.0 || d0 > room {
            return Err(too_large(d0));
        }
        site.retreat_max = solve_proportional(d0, c.scar.volume, |d| {
            let mut s = site.clone();
            s.retreat_max = d;
            s.scar_volume_on(grid)
        });
        if site.retreat_max.is_nan() || site.retreat_max <= 0.0 || site.retreat_max > room {
            return Err(too_large(site.retreat_max));
        }
        Ok(())
    }

    /// Pillar: the box of whole truth cells, its height from the volume, its front placed
    /// where the smooth intact surface rises by that height over the box's depth.
    fn solve_pillar(&self, grid: &Grid) -> Result<Pillar, Error> {
        let c = &self.config;
        let s = &c.scar;
        let cell = grid.cell;
        let (nx, ny) = ((s.width / cell).round().max(1.0), (s.depth / cell).round().max(1.0));
        let (w, d) = (nx * cell, ny * cell);
        let height = s.volume / (w * d);
        let x0 = ((self.scar_x - 0.5 * w) / cell).round() * cell;
        let x1 = x0 + w;
        let xc = 0.5 * (x0 + x1);
        let foot = self.foot_y(xc);
        // Rise of the smooth intact surface over [t, t + d] behind the foot at the centre.
        let rise = |u: f64| self.base_pre(xc, foot + u + d) - self.base_pre(xc, foot + u);
        // The upper crossing rise(t0) = height: past the window of largest rise.
        let far = c.extent[1] - foot - d;
        let (mut t_max, mut r_max) = (0.0, f64::NEG_INFINITY);
        let mut u = -d;
        while u <= self.cliff_width.min(far) {
            let r = rise(u);
            if r > r_max {
                (t_max, r_max) = (u, r);
            }
            u += 0.25;
        }
        if r_max.is_nan() || height.is_nan() || r_max < height {
            return Err(Error::Config(format!(
                "scar of {:.3e} m³ as a pillar of {w} m × {d} m would be {height:.1} m tall, more than the \
                 {r_max:.1} m the cliff rises over {d} m: it is larger than the cliff (reduce scar.volume or \
                 enlarge scar.width / scar.depth)",
                s.volume
            )));
        }
        if rise(far) > height {
            return Err(Error::Config(format!(
                "a pillar {height:.1} m tall is lower than the plateau's rise over scar.depth = {d} m: \
                 reduce scar.width / scar.depth"
            )));
        }
        let (mut lo, mut hi) = (t_max, far);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if rise(mid) >= height { lo = mid } else { hi = mid }
        }
        let y0 = ((foot + lo) / cell).round() * cell;
        let y1 = y0 + d;
        if y1 > c.extent[1] - 10.0 {
            return Err(Error::Config(format!(
                "the pillar's back wall (y = {y1:.0} m) leaves the site's {} m south-north extent",
                c.extent[1]
            )));
        }
        // The box lies behind the cliff foot everywhere, so scar and deposit never overlap.
        let mut x = x0 + 0.5 * cell;
        while x < x1 {
            if self.foot_y(x) >= y0 {
                return Err(Error::Config(format!(
                    "the pillar's front (y = {y0:.1} m) reaches the cliff foot (y = {:.1} m at x = {x:.1} m): \
                     scar and deposit would overlap (reduce scar.depth or terrain.foot_wander)",
                    self.foot_y(x)
                )));
            }
            x += cell;
        }
        let top = self.base_pre(xc, y1);
        Ok(Pillar { x0, x1, y0, y1, top, bench: top - height })
    }

    /// y of the cliff foot at x, m.
    pub fn foot_y(&self, x: f64) -> f64 {
        self.config.terrain.foot_y + self.wander.at(x, 0.0)
    }

    fn profile(&self, t: f64, tan_cliff: f64, width: f64) -> f64 {
        let r = self.config.terrain.corner_radius;
        self.tan_valley * t + (tan_cliff - self.tan_valley) * softplus(t, r)
            - (tan_cliff - self.tan_plateau) * softplus(t - width, r)
    }

    /// Smooth intact surface (no relief), m.
    pub fn base_pre(&self, x: f64, y: f64) -> f64 {
        let t = &self.config.terrain;
        let river = -t.river_depth * (-((y - t.river_y) / (0.5 * t.river_width)).powi(2)).exp();
        let bank = (self.tan_valley + self.tan_bank) * softplus(t.river_y - y, t.corner_radius);
        t.foot_elevation - t.downstream_gradient * x
            + self.profile(y - self.foot_y(x), self.tan_cliff, self.cliff_width)
            + river
            + bank
    }

    /// Retreat of the cliff top at x, m.
    pub fn retreat(&self, x: f64) -> f64 {
        let u = (x - self.scar_x) / (0.5 * self.config.scar.width);
        if u.abs() >= 1.0 { 0.0 } else { self.retreat_max * (1.0 - u.powi(4)).powi(2) }
    }

    fn base_deficit(&self, x: f64, y: f64) -> f64 {
        let d = self.retreat(x);
        if d <= 0.0 {
            return 0.0;
        }
        let r = self.config.terrain.corner_radius;
        let h = self.config.terrain.cliff_height;
        let (w, w2) = (self.cliff_width, self.cliff_width + d);
        // Post-event face slope: the deficit vanishes beyond the crown (see the module doc).
        let tan_post = (h + self.tan_plateau * d - self.tan_cliff * r) / (w2 - r);
        let t = y - self.foot_y(x);
        let delta = (self.tan_cliff - tan_post) * foot_ramp(t, r)
            - (self.tan_cliff - self.tan_plateau) * softplus(t - w, r)
            + (tan_post - self.tan_plateau) * softplus(t - w2, r);
        delta.max(0.0)
    }

    fn cliffness(&self, x: f64, y: f64) -> f64 {
        let t = y - self.foot_y(x);
        let r = self.config.terrain.corner_radius;
        let a = 1.0 / (1.0 + (-t / r).exp());
        let b = 1.0 / (1.0 + ((t - self.cliff_width) / r).exp());
        a * b
    }

    fn roughness(&self, x: f64, y: f64) -> f64 {
        let k = 1.0 + (self.config.terrain.cliff_roughness - 1.0) * self.cliffness(x, y);
        k * self.relief.at(x, y)
    }

    /// Pre-event surface, m.
    pub fn z_pre(&self, x: f64, y: f64) -> f64 {
        match self.pillar {
            Some(p) if p.contains(x, y) => p.top,
            _ => self.base_pre(x, y) + self.roughness(x, y),
        }
    }

    /// Scar deficit z_pre - z_post (≥ 0), with the fresh surface's own roughness, m.
    pub fn deficit(&self, x: f64, y: f64) -> f64 {
        if let Some(p) = self.pillar {
            return if p.contains(x, y) { p.height() } else { 0.0 };
        }
        let db = self.base_deficit(x, y);
        if db <= 0.0 {
            return 0.0;
        }
        let lambda = db.min(1.0);
        (db + lambda * (self.roughness(x, y) - self.scar_relief.at(x, y))).max(0.0)
    }

    /// Deposit thickness z_post - z_pre (≥ 0), m.
    pub fn thickness(&self, x: f64, y: f64) -> f64 {
        let s = self.foot_y(x) - y;
        if s <= 0.0 || s >= self.runout || self.deposit_height <= 0.0 {
            return 0.0;
        }
        let sigma = s / self.runout;
        let b = 0.5
            * self.config.scar.width
            * self.config.deposit.spread
            * (1.0 - sigma).powf(self.config.deposit.taper);
        let dx = x - self.scar_x;
        if dx.abs() >= b {
            return 0.0;
        }
        let shape = smoothstep(sigma / 0.25) * (1.0 - sigma).sqrt() * (1.0 - (dx / b).powi(2));
        let t = self.deposit_height * shape;
        let lambda = (t / 2.0).min(1.0);
        (t + lambda * self.deposit_relief.at(x, y)).max(0.0)
    }

    /// Post-event surface, m.
    pub fn z_post(&self, x: f64, y: f64) -> f64 {
        self.z_pre(x, y) - self.deficit(x, y) + self.thickness(x, y)
    }

    /// Canopy height above ground at (x, y) for the pre (`post = false`) or post survey:
    /// 0 where bare (steep ground, outside the cover, and in the scar and deposit after).
    pub fn canopy(&self, x: f64, y: f64, post: bool) -> f64 {
        let v = &self.config.vegetation;
        let m = self.veg_mask.at(x, y) - self.veg_threshold;
        if m <= 0.0 || v.max_height <= 0.0 {
            return 0.0;
        }
        let e = 1.0;
        let gx = (self.base_pre(x + e, y) - self.base_pre(x - e, y)) / (2.0 * e);
        let gy = (self.base_pre(x, y + e) - self.base_pre(x, y - e)) / (2.0 * e);
        if (gx * gx + gy * gy).sqrt() > v.max_slope.to_radians().tan() {
            return 0.0;
        }
        if post && (self.deficit(x, y) > MASK_THRESHOLD || self.thickness(x, y) > MASK_THRESHOLD) {
            return 0.0;
        }
        let edge = (m / 0.15).min(1.0);
        let hv = v.max_height * edge * (0.55 + 0.45 * self.veg_height.at(x, y)).clamp(0.03, 1.0);
        if hv < 0.2 { 0.0 } else { hv }
    }

    /// Scar volume Σ deficit × cell² over the grid (only the scar's columns), m³.
    pub fn scar_volume_on(&self, grid: &Grid) -> f64 {
        if let Some(p) = self.pillar {
            let a = grid.cell * grid.cell;
            let mut v = 0.0;
            for i in grid.cols(p.x0, p.x1) {
                let mut col = 0.0;
                for j in grid.rows(p.y0, p.y1) {
                    col += self.deficit(grid.x(i), grid.y(j));
                }
                v += col * a;
            }
            return v;
        }
        let (x0, x1) = (
            self.scar_x - 0.5 * self.config.scar.width,
            self.scar_x + 0.5 * self.config.scar.width,
        );
        let t = &self.config.terrain;
        let y0 = t.foot_y - 2.0 * t.foot_wander.max(1.0) - 10.0 * t.corner_radius;
        let y1 = t.foot_y
            + 2.0 * t.foot_wander.max(1.0)
            + self.cliff_width
            + self.retreat_max
            + 10.0 * t.corner_radius;
        let a = grid.cell * grid.cell;
        let mut v = 0.0;
        for i in grid.cols(x0, x1) {
            let mut col = 0.0;
            for j in grid.rows(y0, y1) {
                col += self.deficit(grid.x(i), grid.y(j));
            }
            v += col * a;
        }
        v
    }

    /// Deposit volume Σ thickness × cell² over the grid, m³.
    pub fn deposit_volume_on(&self, grid: &Grid) -> f64 {
        let b = 0.5 * self.config.scar.width * self.config.deposit.spread + 5.0;
        let t = &self.config.terrain;
        let y0 = t.foot_y - 2.0 * t.foot_wander.max(1.0) - self.runout - 5.0;
        let y1 = t.foot_y + 2.0 * t.foot_wander.max(1.0) + 5.0;
        let a = grid.cell * grid.cell;
        let mut v = 0.0;
        for i in grid.cols(self.scar_x - b, self.scar_x + b) {
            let mut col = 0.0;
            for j in grid.rows(y0, y1) {
                col += self.thickness(grid.x(i), grid.y(j));
            }
            v += col * a;
        }
        v
    }
}
