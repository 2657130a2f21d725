//! The allocator's settings for a simulation's process.
//!
//! Every step builds its islands' programs and factors afresh: vectors of a few hundred kB
//! to a few MB, freed at the end of the step. With glibc's defaults, memory freed at the top
//! of the heap goes back to the kernel as soon as 128 kB are free there, so the next step's
//! allocations fault every page in again (zeroed by the kernel). On 150 steps of the default
//! site's run, one thread: 168,900 page faults against 4,500 with the settings below, and
//! 3.82–4.01 s against 3.55–3.91 s, the kernel's share 0.40–0.46 s against 0.06–0.09 s
//! (docs/benchmarks.md, session 24). The outputs are the same bit for bit.

/// Keep freed memory in the process (up to 256 MB free at the top of the heap) and serve
/// allocations of up to 32 MB from the heap rather than by `mmap`. Call once, at the start
/// of `main`. Does nothing off Linux with glibc.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const TRIM_THRESHOLD: libc::c_int = 256 << 20;
        const MMAP_THRESHOLD: libc::c_int = 32 << 20;
        // SAFETY: mallopt only sets two of the allocator's parameters (under the allocator's
        // lock). A value it refuses leaves the default in place.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
    }
}
