//! The solvers' inner loops compiled a second time for AVX2, and chosen at run time.
//!
//! The build targets x86-64's baseline (SSE2: two f64 per register), so that a binary runs
//! on any x86-64 processor. A function defined by [`wide_fn`] runs its kernel through a
//! copy compiled with AVX2 (four f64 per register) when the processor has it. The answers
//! are the same, bit for bit: Rust never fuses a product and a sum into one rounding, and
//! LLVM vectorises a floating-point loop only where that keeps the order of its
//! operations, so the two copies differ only in their instructions.
//!
//! A kernel is marked `#[inline(always)]`, and so is what it calls in its inner loops:
//! only what is inlined into the AVX2 copy is compiled for AVX2.

/// Which copy of the kernels this processor runs: `"AVX2"` or `"baseline"` (for benchmark
/// headers: timings of the two are not comparable).
pub fn kernels() -> &'static str {
    if has_avx2() { "AVX2" } else { "baseline" }
}

/// Whether the processor has AVX2 (what [`wide_fn`] decides by).
#[inline(always)]
pub(crate) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return true;
    }
    false
}

/// `$vis fn $name($arg: $ty, ...) -> $ret` calling `$kernel($arg, ...)`, through a copy
/// compiled for AVX2 when the processor has it.
macro_rules! wide_fn {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $kernel:path;) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2")]
            fn avx2($($arg: $ty),*) $(-> $ret)? {
                $kernel($($arg),*)
            }
            #[cfg(target_arch = "x86_64")]
            if $crate::solver::wide::has_avx2() {
                // SAFETY: the processor has AVX2, checked just above.
                return unsafe { avx2($($arg),*) };
            }
            $kernel($($arg),*)
        }
    };
}

pub(crate) use wide_fn;
