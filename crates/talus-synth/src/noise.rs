//! Seeded summed-noise (fractional Brownian) relief: 2D gradient noise octaves with
//! amplitude ∝ wavelength^H, hashed from the seed so any point is evaluated on its own
//! (no tables, no order dependence, identical for every thread).

/// SplitMix64 finaliser: a well-mixed 64-bit hash.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash of a seed and a stream label (for per-strip RNG seeds and per-field noise seeds).
pub fn sub_seed(seed: u64, label: u64) -> u64 {
    mix(seed ^ mix(label.wrapping_add(0x5851_F42D_4C95_7F2D)))
}

const GRADS: [(f64, f64); 8] = [
    (1.0, 0.0),
    (-1.0, 0.0),
    (0.0, 1.0),
    (0.0, -1.0),
    (std::f64::consts::FRAC_1_SQRT_2, std::f64::consts::FRAC_1_SQRT_2),
    (-std::f64::consts::FRAC_1_SQRT_2, std::f64::consts::FRAC_1_SQRT_2),
    (std::f64::consts::FRAC_1_SQRT_2, -std::f64::consts::FRAC_1_SQRT_2),
    (-std::f64::consts::FRAC_1_SQRT_2, -std::f64::consts::FRAC_1_SQRT_2),
];

#[inline]
fn corner(seed: u64, ix: i64, iy: i64, dx: f64, dy: f64) -> f64 {
    let h = mix(seed
        ^ (ix as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (iy as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
    let (gx, gy) = GRADS[(h >> 61) as usize];
    gx * dx + gy * dy
}

#[inline]
fn fade(t: f64) -> f64 {
    t * t * t * (t * (t * 6.0 - 15.0) + 10.0)
}

/// Perlin gradient noise of unit lattice spacing, roughly in [-1, 1], zero on lattice nodes.
pub fn gradient_noise(seed: u64, x: f64, y: f64) -> f64 {
    let (fx, fy) = (x.floor(), y.floor());
    let (ix, iy) = (fx as i64, fy as i64);
    let (dx, dy) = (x - fx, y - fy);
    let n00 = corner(seed, ix, iy, dx, dy);
    let n10 = corner(seed, ix + 1, iy, dx - 1.0, dy);
    let n01 = corner(seed, ix, iy + 1, dx, dy - 1.0);
    let n11 = corner(seed, ix + 1, iy + 1, dx - 1.0, dy - 1.0);
    let (u, v) = (fade(dx), fade(dy));
    let a = n00 + u * (n10 - n00);
    let b = n01 + u * (n11 - n01);
    1.4 * (a + v * (b - a))
}

/// One octave: wavelength, amplitude, lattice offset and seed.
#[derive(Debug, Clone, Copy)]
struct Octave {
    freq: f64,
    amp: f64,
    off: (f64, f64),
    seed: u64,
}

/// A sum of gradient-noise octaves.
#[derive(Debug, Clone)]
pub struct Fbm {
    octaves: Vec<Octave>,
}

impl Fbm {
    /// Octaves from `longest` halving down to `shortest` wavelength (m); the longest has
    /// amplitude `amplitude` and each shorter one amplitude × (λ/longest)^hurst.
    pub fn new(seed: u64, amplitude: f64, longest: f64, shortest: f64, hurst: f64) -> Self {
        let mut octaves = Vec::new();
        let mut lambda = longest;
        let mut k = 0u64;
        while lambda >= shortest * 0.999 {
            let s = sub_seed(seed, k);
            let off = (
                (s >> 11) as f64 / (1u64 << 53) as f64 * 1000.0,
                (mix(s) >> 11) as f64 / (1u64 << 53) as f64 * 1000.0,
            );
            octaves.push(Octave {
                freq: 1.0 / lambda,
                amp: amplitude * (lambda / longest).powf(hurst),
                off,
                seed: s,
            });
            lambda *= 0.5;
            k += 1;
        }
        Fbm { octaves }
    }

    /// Value at (x, y) (m).
    pub fn at(&self, x: f64, y: f64) -> f64 {
        self.octaves
            .iter()
            .map(|o| o.amp * gradient_noise(o.seed, x * o.freq + o.off.0, y * o.freq + o.off.1))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_is_seeded_bounded_and_zero_mean() {
        let f = Fbm::new(7, 1.0, 64.0, 2.0, 0.8);
        let g = Fbm::new(8, 1.0, 64.0, 2.0, 0.8);
        let f2 = Fbm::new(7, 1.0, 64.0, 2.0, 0.8);
        let (mut sum, mut n, mut diff) = (0.0, 0.0, 0.0);
        for i in 0..200 {
            for j in 0..200 {
                let (x, y) = (i as f64 * 1.7, j as f64 * 1.3);
                let v = f.at(x, y);
                assert!(v.abs() < 5.0);
                assert_eq!(v, f2.at(x, y));
                sum += v;
                n += 1.0;
                diff += (v - g.at(x, y)).abs();
            }
        }
        assert!((sum / n).abs() < 0.15, "mean {}", sum / n);
        assert!(diff / n > 0.1, "different seeds give different relief");
    }
}
