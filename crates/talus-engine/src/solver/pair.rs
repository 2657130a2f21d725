//! Two threads sharing the phases of one iterative solve.
//!
//! A large island's ADMM iteration is a chain of short phases (products with C and Cᵀ,
//! the two triangular solves, the projections), each a few tens of microseconds long. A
//! rayon join per phase costs more than that (a sleeping worker must be woken), so the
//! solve borrows a second rayon worker once, for all its iterations: [`Pair::solve`] runs
//! the solve on the calling thread and offers the helper loop to rayon. While the solve
//! runs, each [`Pair::run`] publishes a phase of two halves: the caller does half 0, and
//! half 1 is done by the helper if it has claimed it by then, else by the caller. Without
//! an idle worker (one thread, or every worker busy with other islands) the caller does
//! every half itself, so a solve never waits for a thread that is not there. The halves
//! write disjoint parts of the solve's buffers, and each entry is computed by the same
//! operations in the same order whichever thread does it: the answer is the same, bit for
//! bit, on one thread or two.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The job of a phase, its lifetime erased (see [`Pair::run`] for why it is never called
/// after the phase).
#[derive(Clone, Copy)]
struct Job(*const (dyn Fn(usize) + Sync));

// SAFETY: the pointee is `Sync`, and the pointer is only dereferenced while the phase that
// published it waits for it (see `Pair::run`).
unsafe impl Send for Job {}

/// The state two threads share during one solve.
pub(crate) struct Pair {
    /// Phase number × 2, + 1 once its second half is claimed (by either thread).
    state: AtomicU64,
    /// The last phase whose second half the helper finished.
    done: AtomicU64,
    /// The job of the current phase.
    job: Mutex<Option<Job>>,
    /// Set when the solve is over: the helper returns.
    stop: AtomicBool,
    /// Set when the helper's half panicked.
    panicked: AtomicBool,
    /// Phases published so far (the caller's count).
    phase: AtomicU64,
    /// Set while the caller hands work to rayon ([`with_rayon`]): the idle helper takes
    /// rayon's jobs.
    lend: AtomicBool,
}

impl Pair {
    fn new() -> Self {
        Pair {
            state: AtomicU64::new(0),
            done: AtomicU64::new(0),
            job: Mutex::new(None),
            stop: AtomicBool::new(false),
            panicked: AtomicBool::new(false),
            phase: AtomicU64::new(0),
            lend: AtomicBool::new(false),
        }
    }

    /// Run `solve` on this thread with a pair whose helper is offered to rayon; the helper
    /// joins when a worker is idle and leaves when `solve` returns. With one rayon thread,
    /// `solve` gets no pair.
    pub(crate) fn solve<T: Send>(solve: impl FnOnce(Option<&Pair>) -> T + Send) -> T {
        if rayon::current_num_threads() < 2 {
            return solve(None);
        }
        let pair = Pair::new();
        let (out, ()) = rayon::join(
            || {
                // Stop the helper even if the solve panics.
                struct Stop<'a>(&'a AtomicBool);
                impl Drop for Stop<'_> {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::Release);
                    }
                }
                let _stop = Stop(&pair.stop);
                solve(Some(&pair))
            },
            || pair.help(),
        );
        out
    }

    /// The helper: claim and do the second half of each phase until the solve is over.
    fn help(&self) {
        let mut last = 0u64;
        let mut idle = 0u32;
        while !self.stop.load(Ordering::Acquire) {
            let st = self.state.load(Ordering::Acquire);
            let phase = st >> 1;
            if phase > last && st & 1 == 0 {
                last = phase;
                if self
                    .state
                    .compare_exchange(st, st | 1, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    let job = self.job.lock().expect("the job's lock").expect("a published job");
                    // SAFETY: the caller published this job for `phase` and waits in `run`
                    // until `done` reaches `phase`, so the closure is alive.
                    let f = unsafe { &*job.0 };
                    if catch_unwind(AssertUnwindSafe(|| f(1))).is_err() {
                        self.panicked.store(true, Ordering::Release);
                    }
                    self.done.store(phase, Ordering::Release);
                }
                idle = 0;
            } else {
                // While the caller lends this thread to rayon, take its jobs, and keep
                // spinning between them (the caller's next one comes within microseconds).
                let lending = self.lend.load(Ordering::Acquire);
                if lending && rayon::yield_now() == Some(rayon::Yield::Executed) {
                    idle = 0;
                    continue;
                }
                idle = idle.saturating_add(1);
                if lending || idle < 1 << 14 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Do `f(0)` and `f(1)`, the two halves of a phase: the second on the helper if it
    /// claims it first. Returns once both are done. Only the thread `solve` runs on
    /// publishes phases.
    pub(crate) fn run(&self, f: &(dyn Fn(usize) + Sync)) {
        let phase = self.phase.fetch_add(1, Ordering::Relaxed) + 1;
        // SAFETY (of the helper's dereference): the pointer is erased of its lifetime, but
        // the helper calls it only after claiming this phase, and this function returns
        // only when the claim is its own or the helper has reported the phase done.
        let erased: *const (dyn Fn(usize) + Sync + '_) = f;
        let job = Job(unsafe {
            std::mem::transmute::<
                *const (dyn Fn(usize) + Sync + '_),
                *const (dyn Fn(usize) + Sync + 'static),
            >(erased)
        });
        *self.job.lock().expect("the job's lock") = Some(job);
        self.state.store(phase << 1, Ordering::Release);
        // Half 0 may panic: the helper may still be in half 1, which borrows what the
        // unwinding would free, so wait for it before unwinding.
        let first = catch_unwind(AssertUnwindSafe(|| f(0)));
        if self
            .state
            .compare_exchange(phase << 1, phase << 1 | 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            if first.is_ok() {
                f(1);
            }
        } else {
            // Spin while the helper finishes its half; yield if it takes long (the helper
            // may have lost its core).
            let mut spins = 0u32;
            while self.done.load(Ordering::Acquire) < phase {
                spins = spins.saturating_add(1);
                if spins < 1 << 12 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        *self.job.lock().expect("the job's lock") = None;
        if let Err(p) = first {
            resume_unwind(p);
        }
        if self.panicked.load(Ordering::Acquire) {
            panic!("a solve's second thread panicked");
        }
    }
}

/// Run `f` on this thread while `pair`'s helper, when it is idle, runs rayon's pending
/// jobs (`rayon::yield_now`), so that what `f` hands to rayon (faer's parallel kernels,
/// `Par::rayon`) runs on both threads. Without a pair, `f` runs alone. Nothing waits for
/// the helper: if it takes a long job from rayon's queues (another island, another
/// member of an ensemble), this solve's phases go on without it, as when it is busy
/// elsewhere, until it comes back.
pub(crate) fn with_rayon<T>(pair: Option<&Pair>, f: impl FnOnce() -> T) -> T {
    let Some(pair) = pair else { return f() };
    // Stop lending when `f` returns or panics.
    struct Lend<'a>(&'a AtomicBool);
    impl Drop for Lend<'_> {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }
    pair.lend.store(true, Ordering::Release);
    let _lend = Lend(&pair.lend);
    f()
}

/// `f` on each of two parts, one after the other, or at once on `pair`.
pub(crate) fn both<S: Send>(pair: Option<&Pair>, parts: [S; 2], f: impl Fn(&mut S) + Sync) {
    let parts = parts.map(Mutex::new);
    let half = |k: usize| f(&mut parts[k].lock().expect("a half's buffers"));
    match pair {
        Some(pair) => pair.run(&half),
        None => {
            half(0);
            half(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every phase's two halves are done exactly once, in the caller's phase order,
    /// whichever thread does them (on a pool of two threads; the helper joins when the
    /// second one is free).
    #[test]
    fn every_half_of_every_phase_is_done_once() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        pool.install(every_half_once);
    }

    fn every_half_once() {
        let counts: Vec<[std::sync::atomic::AtomicU32; 2]> = (0..2000)
            .map(|_| [std::sync::atomic::AtomicU32::new(0), std::sync::atomic::AtomicU32::new(0)])
            .collect();
        let sums = Pair::solve(|pair| {
            let pair = pair.expect("the test runs on rayon's pool of two threads or more");
            let mut sums = Vec::new();
            for (p, c) in counts.iter().enumerate() {
                let out = [Mutex::new(0u64), Mutex::new(0u64)];
                pair.run(&|half| {
                    c[half].fetch_add(1, Ordering::Relaxed);
                    // Some work, different on each half.
                    let s: u64 = (0..(100 * (half as u64 + 1))).map(|k| k * p as u64).sum();
                    *out[half].lock().unwrap() = s;
                });
                sums.push(*out[0].lock().unwrap() + *out[1].lock().unwrap());
            }
            sums
        });
        for (p, c) in counts.iter().enumerate() {
            assert_eq!(c[0].load(Ordering::Relaxed), 1, "phase {p}, half 0");
            assert_eq!(c[1].load(Ordering::Relaxed), 1, "phase {p}, half 1");
            let p = p as u64;
            assert_eq!(sums[p as usize], p * (99 * 100 / 2) + p * (199 * 200 / 2));
        }
    }

    /// A panic in the solver's half unwinds the solve only once the helper's half, which
    /// may borrow what the unwinding frees, is over: a guard dropped by the unwinding finds
    /// every started half finished.
    #[test]
    fn a_panicking_half_waits_for_the_other() {
        struct Guard<'a>(&'a AtomicU64, &'a AtomicU64, &'a AtomicBool);
        impl Drop for Guard<'_> {
            fn drop(&mut self) {
                if self.0.load(Ordering::SeqCst) != self.1.load(Ordering::SeqCst) {
                    self.2.store(true, Ordering::SeqCst);
                }
            }
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        let (mut helped, early) = (0, AtomicBool::new(false));
        for _ in 0..20 {
            let (started, finished) = (AtomicU64::new(0), AtomicU64::new(0));
            let outcome = pool.install(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    Pair::solve(|pair| {
                        let pair = pair.expect("two threads");
                        let _guard = Guard(&started, &finished, &early);
                        // A few phases first, so that the helper has joined.
                        for _ in 0..200 {
                            pair.run(&|_| std::hint::black_box(()));
                        }
                        pair.run(&|half| {
                            if half == 0 {
                                std::thread::sleep(std::time::Duration::from_millis(2));
                                panic!("half 0");
                            }
                            started.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            finished.fetch_add(1, Ordering::SeqCst);
                        });
                    })
                }))
            });
            assert!(outcome.is_err(), "the panic reaches the caller");
            helped += started.load(Ordering::SeqCst);
        }
        assert!(!early.load(Ordering::SeqCst), "the solve unwound while the helper ran");
        assert!(helped > 0, "the helper never took the second half");
    }

    /// What the caller of [`with_rayon`] hands to rayon is done on the helper too: over
    /// 20 solves, some of the joins' second halves ran on another thread than the caller's,
    /// and every answer is the closure's. The lending ends when the closure returns or
    /// panics (its panic reaches the caller), and the phases after it still have both
    /// halves done.
    #[test]
    fn with_rayon_lends_the_helper_to_rayon_while_its_closure_runs() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("a pool");
        let mut elsewhere = 0;
        for t in 0..20u64 {
            let (sum, moved) = pool.install(|| {
                Pair::solve(|pair| {
                    let pair = pair.expect("two threads");
                    for _ in 0..200 {
                        pair.run(&|_| std::hint::black_box(()));
                    }
                    let out = with_rayon(Some(pair), || {
                        let caller = std::thread::current().id();
                        let work = |k: u64| -> (u64, bool) {
                            std::thread::sleep(std::time::Duration::from_millis(5));
                            (k * t, std::thread::current().id() != caller)
                        };
                        let ((a, _), (b, moved)) = rayon::join(|| work(1), || work(2));
                        (a + b, moved)
                    });
                    assert!(!pair.lend.load(Ordering::Acquire), "still lending");
                    let halves = [AtomicU64::new(0), AtomicU64::new(0)];
                    for _ in 0..100 {
                        pair.run(&|h| {
                            halves[h].fetch_add(1, Ordering::Relaxed);
                        });
                    }
                    assert_eq!(halves.map(|h| h.into_inner()), [100, 100]);
                    out
                })
            });
            assert_eq!(sum, 3 * t);
            elsewhere += moved as u32;
        }
        assert!(elsewhere > 0, "the helper never ran a job handed to rayon");
        pool.install(|| {
            Pair::solve(|pair| {
                let pair = pair.expect("two threads");
                let outcome =
                    catch_unwind(AssertUnwindSafe(|| with_rayon(Some(pair), || panic!("f"))));
                assert!(outcome.is_err(), "the panic reaches the caller");
                assert!(!pair.lend.load(Ordering::Acquire), "still lending after the panic");
            })
        });
    }
}
