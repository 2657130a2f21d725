//! Helpers shared by the solvers' tests.

/// Uniform numbers in [−½, ½) from a linear congruential generator seeded with `seed`.
pub(crate) fn uniform(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
    }
}

/// The bits of the numbers `v` (to compare results exactly, signed zeros included).
pub(crate) fn bits<'a>(v: impl IntoIterator<Item = &'a f64>) -> Vec<u64> {
    v.into_iter().map(|a| a.to_bits()).collect()
}
