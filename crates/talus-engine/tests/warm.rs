//! The warm-started solver agrees with Clarabel on every QP of the test scenarios, and
//! falls back to Clarabel (recorded) when it cannot converge.

mod common;
use common as heap;

use talus_engine::config::SolverConfig;
use talus_engine::detect::{DetectParams, DetectTimings, detect};
use talus_engine::files::statics;
use talus_engine::sim::Simulation;
use talus_engine::solvers::{kkt_residuals, solve_clarabel};
use talus_engine::step::{prepare, step_with_contacts};
use talus_engine::warm::{solve_warm, try_solve};

/// Run `steps` steps of the heap with the warm solver, checking each island's QP against
/// Clarabel before the step is taken. Returns (QPs checked, worst relative difference,
/// warm failures).
fn check_heap(n: usize, steps: u64) -> (usize, f64, usize) {
    let dir = heap::thesis_dir();
    let blocks = heap::thesis_blocks(&dir, n);
    let solver =
        SolverConfig::Warm { tolerance: 1e-10, max_iterations: 50, fallback_tolerance: 1e-10 };
    let config = heap::heap_config(steps, solver);
    let st = statics(&config, None);
    let mut sim = Simulation::new(config.clone(), blocks, st).expect("simulation");
    let (mut checked, mut worst, mut failures, mut explained, mut worst_explained) =
        (0usize, 0f64, 0usize, 0usize, 0f64);
    for _ in 0..steps {
        let mut t = DetectTimings::default();
        let contacts = detect(
            &sim.blocks,
            &sim.statics,
            &DetectParams { tolerance: config.tolerance },
            &mut t,
        );
        let prep = prepare(&sim.params, &sim.blocks, &contacts);
        for isl in &prep.islands {
            let lambda0 = sim.warm.initial_lambda(&isl.keys);
            let reference = solve_clarabel(&isl.qp, 1e-11, 400);
            assert!(reference.solved, "clarabel: {}", reference.status);
            match try_solve(&isl.qp, &lambda0, 1e-9, 50) {
                Some(w) => {
                    let scale = reference.x.iter().fold(1.0f64, |a, v| a.max(v.abs()));
                    let diff =
                        w.x.iter().zip(&reference.x).fold(0.0f64, |a, (p, q)| a.max((p - q).abs()))
                            / scale;
                    if diff >= 1e-8 {
                        // Degenerate QPs (a constraint active with a zero multiplier) stop
                        // Clarabel's interior point short of the vertex: then the warm
                        // solution must satisfy the KKT conditions better than Clarabel's.
                        let (wp, wd, wc, _) = kkt_residuals(&isl.qp, &w.x, &w.lambda);
                        let (cp, cd, cc, _) =
                            kkt_residuals(&isl.qp, &reference.x, &reference.lambda);
                        let ps = isl.qp.p.iter().fold(1e-3f64, |a, v| a.max(v.abs()));
                        let rs = isl.qp.r.iter().fold(1e-3f64, |a, v| a.max(v.abs()));
                        assert!(
                            wp <= 1e-9 * rs && wd <= 1e-9 * ps && wc <= 1e-9 * rs * ps,
                            "QP of {} variables: warm and clarabel differ by {diff:e}; KKT warm ({wp:e}, {wd:e}, {wc:e}) clarabel ({cp:e}, {cd:e}, {cc:e})",
                            isl.qp.n()
                        );
                        let _ = (cp, cd, cc);
                        worst_explained = worst_explained.max(diff);
                        explained += 1;
                    } else {
                        worst = worst.max(diff);
                    }
                }
                None => failures += 1,
            }
            checked += 1;
        }
        let rep = step_with_contacts(&sim.params, &mut sim.blocks, &contacts, &mut sim.warm);
        assert!(rep.failed.is_empty());
    }
    eprintln!(
        "{explained} QPs differ by more than 1e-8 (up to {worst_explained:.2e}); there the warm solution meets the KKT conditions to 1e-9 relative"
    );
    (checked, worst, failures)
}

#[test]
fn warm_solver_agrees_with_clarabel_on_the_heap() {
    if !heap::thesis_dir().join("size_100.data").exists() {
        eprintln!("skipped: thesis data not found");
        return;
    }
    let (checked, worst, failures) = check_heap(100, 700);
    eprintln!(
        "heap N=100, 700 steps: {checked} QPs, worst relative difference {worst:.2e}, {failures} warm failures"
    );
    assert!(checked > 100);
    assert!(failures * 20 <= checked, "{failures} of {checked} QPs fell back");
}

#[test]
fn fallback_is_recorded() {
    if !heap::thesis_dir().join("size_100.data").exists() {
        eprintln!("skipped: thesis data not found");
        return;
    }
    // A contact-rich QP from the heap; one Newton iteration is not enough.
    let dir = heap::thesis_dir();
    let blocks = heap::thesis_blocks(&dir, 100);
    let config =
        heap::heap_config(10, SolverConfig::Clarabel { tolerance: 1e-9, max_iterations: 200 });
    let st = statics(&config, None);
    let mut sim = Simulation::new(config.clone(), blocks, st).expect("simulation");
    for _ in 0..600 {
        sim.advance();
    }
    let mut t = DetectTimings::default();
    let contacts =
        detect(&sim.blocks, &sim.statics, &DetectParams { tolerance: config.tolerance }, &mut t);
    let prep = prepare(&sim.params, &sim.blocks, &contacts);
    let big = prep.islands.iter().max_by_key(|i| i.qp.m()).expect("an island");
    let zero = vec![0.0; big.qp.m()];
    let o = solve_warm(&big.qp, &zero, 1e-10, 1, 1e-10);
    assert!(o.fallback && o.solved, "{o:?}");
    assert_eq!(o.solver, talus_engine::solvers::SolverUsed::Clarabel);
}
