//! Seeding: exact fill of a box-shaped void, containment and non-overlap on a cliff-like
//! scar, size classes, target count, bad input, and the stage's files.

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Float64Array, Int32Array, RecordBatch, StringArray,
    UInt32Array,
};
use std::path::Path;
use std::sync::Arc;
use talus_io::NoProgress;
use talus_seed::boxes::{Block, boxes_overlap};
use talus_seed::void::{GridGeometry, Outline, Void};
use talus_seed::{Config, Error, seed};

/// A void on a grid from surface functions, fillable inside `polygon`.
pub(crate) fn make_void(
    grid: GridGeometry,
    pre: impl Fn(f64, f64) -> f64,
    post: impl Fn(f64, f64) -> f64,
    polygon: &[[f64; 2]],
) -> (Void, Outline) {
    let n = grid.nx * grid.ny;
    let mut v = Void { grid, z_pre: vec![0.0; n], z_post: vec![0.0; n], fillable: vec![false; n] };
    let outline = Outline::new(&[vec![polygon.to_vec()]], grid.cell);
    for r in 0..grid.ny {
        for c in 0..grid.nx {
            let m = v.centre(r, c);
            let i = r * grid.nx + c;
            v.z_pre[i] = pre(m[0], m[1]);
            v.z_post[i] = post(m[0], m[1]);
            v.fillable[i] = outline.contains(m[0], m[1], 0.0);
        }
    }
    (v, outline)
}

/// No two blocks overlap (exact SAT on every pair close enough to matter).
pub(crate) fn assert_disjoint(blocks: &[Block]) {
    for i in 0..blocks.len() {
        for j in i + 1..blocks.len() {
            let (p, q) = (&blocks[i], &blocks[j]);
            let reach = |b: &Block| {
                0.5 * (b.size[0].powi(2) + b.size[1].powi(2) + b.size[2].powi(2)).sqrt()
            };
            let d2: f64 = (0..3).map(|k| (p.centre[k] - q.centre[k]).powi(2)).sum();
            if d2.sqrt() < reach(p) + reach(q) {
                assert!(!boxes_overlap(p, q, 1e-6), "blocks {i} and {j} overlap: {p:?} {q:?}");
            }
        }
    }
}

/// Every corner of every block is inside the scar and between the cell-constant surfaces.
fn assert_corners_inside(blocks: &[Block], v: &Void, o: &Outline) {
    let g = v.grid;
    for (k, b) in blocks.iter().enumerate() {
        for p in b.corners() {
            assert!(o.contains(p[0], p[1], 1e-6), "block {k}: corner {p:?} outside the scar");
            // A corner on a cell edge belongs to both cells: check each.
            for (dx, dy) in [(-1e-7, -1e-7), (1e-7, -1e-7), (-1e-7, 1e-7), (1e-7, 1e-7)] {
                let c = ((p[0] + dx - g.x0) / g.cell).floor() as usize;
                let r = ((p[1] + dy - g.y0) / g.cell).floor() as usize;
                let i = r * g.nx + c;
                if !v.fillable[i] {
                    continue;
                }
                assert!(
                    p[2] >= v.z_post[i] - 1e-6 && p[2] <= v.z_pre[i] + 1e-6,
                    "block {k}: corner {p:?} outside [{}, {}]",
                    v.z_post[i],
                    v.z_pre[i]
                );
            }
        }
    }
}

/// A 12 × 6 × 10 m box-shaped void (x 5-17 m, y 5-11 m, z 100-110 m) on 1 m cells.
fn box_void() -> (Void, Outline) {
    let grid = GridGeometry { x0: 0.0, y0: 0.0, cell: 1.0, nx: 40, ny: 30 };
    let rect = [[5.0, 5.0], [17.0, 5.0], [17.0, 11.0], [5.0, 11.0]];
    make_void(grid, |_, _| 110.0, |_, _| 100.0, &rect)
}

#[test]
fn box_void_is_filled_exactly_by_blocks_that_divide_it() {
    let (v, o) = box_void();
    assert_eq!(v.volume(), 12.0 * 6.0 * 10.0);
    for (size, az) in [([4.0, 3.0, 5.0], 0.0), ([3.0, 4.0, 5.0], 90.0), ([2.0, 6.0, 2.5], 0.0)] {
        let config = Config { size, azimuth: Some(az), ..Config::default() };
        let s = seed(&config, &v, Some(&o), Path::new("box"), &NoProgress).unwrap();
        assert_eq!(s.summary.fill_fraction, 1.0, "{size:?} at {az}°: {:?}", s.summary);
        assert_disjoint(&s.blocks);
        assert_corners_inside(&s.blocks, &v, &o);
    }
}

#[test]
fn sizes_that_could_place_more_than_max_blocks_are_refused_before_paving() {
    let (v, o) = box_void();
    // 1 m cubes pave the 12 × 6 × 10 m box exactly: the bound is the count.
    let cubes = Config { size: [1.0, 1.0, 1.0], azimuth: Some(0.0), ..Config::default() };
    assert_eq!(cubes.block_bound(v.volume()), 720.0);
    let s = seed(&cubes, &v, Some(&o), Path::new("dod.parquet"), &NoProgress).unwrap();
    assert_eq!(s.summary.blocks, 720);
    // One fewer allowed: refused, naming the file, the bound and the limit.
    let tight = Config { max_blocks: 719, ..cubes.clone() };
    let e = seed(&tight, &v, Some(&o), Path::new("dod.parquet"), &NoProgress).unwrap_err();
    assert!(matches!(e, Error::TooManyBlocks { bound, max: 719, .. } if bound == 720.0), "{e}");
    let m = e.to_string();
    assert!(m.contains("dod.parquet") && m.contains("720 blocks") && m.contains("719"), "{m}");
    // The thesis's block in millimetres: refused at once by the default limit (about
    // 4e8 blocks), where paving it would run out of memory.
    let mm = Config { size: [10.935e-3, 9.636e-3, 15.775e-3], ..Config::default() };
    let e = seed(&mm, &v, Some(&o), Path::new("dod.parquet"), &NoProgress).unwrap_err();
    assert!(matches!(e, Error::TooManyBlocks { bound, max: 200_000, .. } if bound > 4e8), "{e}");
    // A class with a share is bounded by its share (plus one block), one without by the
    // whole volume.
    let shared = Config {
        sizes: Some(talus_seed::config::Sizes::Classes {
            classes: vec![
                talus_seed::config::SizeClass { size: [2.0, 2.0, 2.0], volume_fraction: Some(0.5) },
                talus_seed::config::SizeClass { size: [1.0, 1.0, 1.0], volume_fraction: None },
            ],
        }),
        ..Config::default()
    };
    assert_eq!(shared.block_bound(720.0), (0.5 * 720.0 / 8.0 + 1.0) + 720.0);
    // A target count above the limit is a configuration error.
    let many = Config { target_count: Some(300_000), ..Config::default() };
    let e = seed(&many, &v, Some(&o), Path::new("dod.parquet"), &NoProgress).unwrap_err();
    assert!(matches!(e, Error::Config(ref m) if m.contains("max_blocks")), "{e}");
}

#[test]
fn a_gap_between_blocks_costs_only_the_gap() {
    // The 12 × 6 × 10 m box holds 3 × 2 × 2 blocks of 3.9 × 2.9 × 4.9 m 0.1 m apart
    // (11.9 × 5.9 × 9.9 m). A lattice step of a/12 would put neighbours 13 steps apart
    // (4.225 m instead of 4.0 along a): 2 × 1 × 2 blocks.
    let (v, o) = box_void();
    let gap = 0.1;
    let config = Config { size: [3.9, 2.9, 4.9], azimuth: Some(0.0), gap, ..Config::default() };
    let s = seed(&config, &v, Some(&o), Path::new("box"), &NoProgress).unwrap();
    assert_eq!(s.summary.blocks, 12, "{:?}", s.summary);
    assert_disjoint(&s.blocks);
    assert_corners_inside(&s.blocks, &v, &o);
    // Axis-aligned blocks: every pair is at least the gap apart along some axis.
    for (i, a) in s.blocks.iter().enumerate() {
        for b in &s.blocks[i + 1..] {
            let apart = (0..3)
                .map(|k| (a.centre[k] - b.centre[k]).abs() - 0.5 * (a.size[k] + b.size[k]))
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(apart >= gap - 1e-9, "blocks {apart} m apart");
        }
    }
}

#[test]
fn fitted_thickness_fills_each_column_to_its_ceiling() {
    // A 12 × 6 × 10 m box: blocks 4 × 3 × 4 m stack two to a column and leave 2 m under
    // the ceiling; fitted, the two share the 10 m, 5 m each, and fill the box.
    let (v, o) = box_void();
    let fixed = Config { size: [4.0, 3.0, 4.0], azimuth: Some(0.0), ..Config::default() };
    let f = seed(&fixed, &v, Some(&o), Path::new("box"), &NoProgress).unwrap();
    assert_eq!(f.summary.blocks, 12);
    assert!((f.summary.fill_fraction - 0.8).abs() < 1e-12, "{}", f.summary.fill_fraction);
    let fit = Config { thickness: talus_seed::pack::Thickness::Fit, ..fixed.clone() };
    let s = seed(&fit, &v, Some(&o), Path::new("box"), &NoProgress).unwrap();
    assert_eq!(s.summary.blocks, 12);
    assert!((s.summary.fill_fraction - 1.0).abs() < 1e-12, "{}", s.summary.fill_fraction);
    assert!(s.blocks.iter().all(|b| (b.size[2] - 5.0).abs() < 1e-12 && b.size[..2] == [4.0, 3.0]));
    assert_eq!(s.summary.classes[0].thickness, [5.0, 5.0]);
    assert_disjoint(&s.blocks);
    assert_corners_inside(&s.blocks, &v, &o);
    // Never thicker than c: three blocks of 10/3 m a column.
    let thin = Config { thickness_range: [0.5, 1.0], ..fit.clone() };
    let t = seed(&thin, &v, Some(&o), Path::new("box"), &NoProgress).unwrap();
    assert_eq!(t.summary.blocks, 18);
    // Blocks thinner than c are counted by the least thickness: 720 / (0.5 × 48) = 30.
    assert_eq!(thin.block_bound(v.volume()), 30.0);
    assert!((t.summary.fill_fraction - 1.0).abs() < 1e-12, "{}", t.summary.fill_fraction);
    assert!(t.blocks.iter().all(|b| (b.size[2] - 10.0 / 3.0).abs() < 1e-12));
    assert_disjoint(&t.blocks);
    assert_corners_inside(&t.blocks, &v, &o);
    // A range that no column of 10 m can meet (blocks 4.4-4.8 m: two would be 5 m, three
    // 3.3 m) leaves the box empty, and the stage says nothing fits. (With `best`, the
    // levels, whose blocks keep c, would be kept instead.)
    let none = Config {
        thickness_range: [1.1, 1.2],
        stacking: talus_seed::pack::Stacking::Columns,
        ..fit.clone()
    };
    assert!(matches!(
        seed(&none, &v, Some(&o), Path::new("box"), &NoProgress),
        Err(Error::NothingFits { .. })
    ));
    for (range, min_inside) in [([0.0, 1.0], 1.0), ([1.0, 0.9], 1.0), ([1.0, 2.0], 0.5)] {
        let bad = Config { thickness_range: range, min_inside, ..fit.clone() };
        let e = seed(&bad, &v, Some(&o), Path::new("box"), &NoProgress).unwrap_err();
        assert!(matches!(e, Error::Config(_)), "{range:?} {min_inside}: {e}");
    }
    // A share of the volume caps the class by volume: half the box is 360 m³, six blocks
    // of 60 m³ (three columns, not six columns' lower blocks).
    let half = Config {
        sizes: Some(talus_seed::config::Sizes::Classes {
            classes: vec![talus_seed::config::SizeClass {
                size: [4.0, 3.0, 4.0],
                volume_fraction: Some(0.5),
            }],
        }),
        size: Config::default().size,
        ..fit
    };
    let h = seed(&half, &v, Some(&o), Path::new("box"), &NoProgress).unwrap();
    assert_eq!(h.summary.blocks, 6);
    assert!((h.summary.seeded_volume - 360.0).abs() < 1e-9, "{}", h.summary.seeded_volume);
    let mut columns: Vec<(i64, i64)> =
        h.blocks.iter().map(|b| (b.centre[0].round() as i64, b.centre[1].round() as i64)).collect();
    columns.sort();
    columns.dedup();
    assert_eq!(columns.len(), 3, "{columns:?}");
}

/// A cliff facing azimuth `face` (radians): post-event surface is a steep slope; the
/// scar is an ellipse on it and the pre-event surface bulges out by up to `depth` m.
pub(crate) fn cliff(face: f64, depth: f64) -> (Void, Outline) {
    let grid = GridGeometry { x0: -200.0, y0: -200.0, cell: 2.0, nx: 200, ny: 200 };
    let (dx, dy) = (face.cos(), face.sin());
    let post = move |x: f64, y: f64| 500.0 - 1.5 * (x * dx + y * dy);
    let ell = move |x: f64, y: f64| {
        let (u, w) = (x * dx + y * dy, -x * dy + y * dx);
        1.0 - (u / 90.0).powi(2) - (w / 120.0).powi(2)
    };
    let pre = move |x: f64, y: f64| post(x, y) + depth * ell(x, y).max(0.0).sqrt();
    let polygon: Vec<[f64; 2]> = (0..96)
        .map(|k| {
            let t = k as f64 * std::f64::consts::TAU / 96.0;
            let (u, w) = (90.0 * t.cos(), 120.0 * t.sin());
            [u * dx - w * dy, u * dy + w * dx]
        })
        .collect();
    make_void(grid, pre, post, &polygon)
}

#[test]
fn cliff_scar_blocks_are_disjoint_contained_and_face_the_cliff() {
    let face = 30f64.to_radians();
    let (v, o) = cliff(face, 60.0);
    let (az, strength) = talus_seed::void::facing_azimuth(&v);
    assert!((az - face).abs() < 1e-6, "azimuth {} vs {}", az.to_degrees(), face.to_degrees());
    assert!(strength > 0.8);
    for size in [[10.935, 9.636, 15.775], [8.852, 7.801, 12.771]] {
        let config = Config { size, ..Config::default() };
        let s = seed(&config, &v, Some(&o), Path::new("cliff"), &NoProgress).unwrap();
        println!(
            "cliff, {size:?}: {} blocks, fill {:.3} of {:.0} m³",
            s.summary.blocks, s.summary.fill_fraction, s.summary.volume_to_fill
        );
        assert!((s.summary.azimuth_deg - 30.0).abs() < 1e-6);
        assert_disjoint(&s.blocks);
        assert_corners_inside(&s.blocks, &v, &o);
        // Measured 0.371 for the larger size (strict containment on a 56° wall).
        assert!(s.summary.fill_fraction > 0.3 && s.summary.fill_fraction <= 1.0);
        // c vertical, a along the facing direction.
        let r = s.blocks[0].axes();
        assert!((r[(2, 2)] - 1.0).abs() < 1e-12 && (r[(0, 0)] - face.cos()).abs() < 1e-12);
    }
}

#[test]
fn size_classes_fill_more_and_target_count_is_met() {
    let (v, o) = cliff(-0.7, 45.0);
    let one = Config::default();
    let s1 = seed(&one, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    let two = Config { extra_sizes: vec![[5.0, 4.5, 7.5], [2.5, 2.2, 3.7]], ..Config::default() };
    let s2 = seed(&two, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    println!(
        "one class {:.3}, three classes {:.3} ({:?})",
        s1.summary.fill_fraction, s2.summary.fill_fraction, s2.summary.classes
    );
    assert!(s2.summary.fill_fraction > s1.summary.fill_fraction);
    assert!(s2.summary.blocks as f64 <= two.block_bound(s2.summary.volume_to_fill));
    assert_eq!(s2.summary.classes[0].blocks, s1.summary.blocks);
    assert_disjoint(&s2.blocks);
    assert_corners_inside(&s2.blocks, &v, &o);
    // On cells cut in four per side, a column takes only the sub-cells it covers: the
    // first class is about the same (the scar's outline is followed on the sub-cells),
    // the smaller ones fill more, still disjoint and inside.
    let fine = Config { subdivide: 4, ..two.clone() };
    let s4 = seed(&fine, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    println!(
        "three classes on sub-cells: {:.3} ({:?})",
        s4.summary.fill_fraction, s4.summary.classes
    );
    assert!(s4.summary.classes[0].blocks.abs_diff(s1.summary.blocks) <= 2);
    assert_eq!(s4.summary.volume_to_fill, s2.summary.volume_to_fill);
    assert!(s4.summary.fill_fraction > s2.summary.fill_fraction);
    assert_disjoint(&s4.blocks);
    assert_corners_inside(&s4.blocks, &v, &o);
    let target = Config { target_count: Some(300), ..Config::default() };
    let s3 = seed(&target, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    println!("target 300: {} blocks of {:?}", s3.summary.blocks, s3.summary.classes[0].size);
    assert!(s3.summary.blocks.abs_diff(300) <= 6, "{}", s3.summary.blocks);
    let ratio = s3.summary.classes[0].size[0] / s3.summary.classes[0].size[2];
    assert!((ratio - 10.935 / 15.775).abs() < 1e-12);
}

#[test]
fn a_power_law_of_sizes_is_placed_largest_first_within_each_class_share() {
    let (v, o) = cliff(-0.7, 45.0);
    let sizes = talus_seed::config::Sizes::PowerLaw {
        exponent: 0.7,
        min_volume: 20.0,
        max_volume: 2500.0,
        shape: Some([1.0, 0.88, 1.44]),
        shapes: Vec::new(),
        classes: 3,
    };
    let config = Config { sizes: Some(sizes), ..Config::default() };
    let classes = config.classes();
    // Classes of equal log-width, largest first, shares of ∫ V^-b dV adding up to 1.
    let vols: Vec<f64> = classes.iter().map(|c| c.size.iter().product()).collect();
    let ratio = (2500.0f64 / 20.0).powf(1.0 / 3.0);
    assert!((vols[0] / vols[1] - ratio).abs() < 1e-9 && (vols[1] / vols[2] - ratio).abs() < 1e-9);
    assert!((vols[2] - 20.0 * ratio.sqrt()).abs() < 1e-9, "{vols:?}");
    let shares: Vec<f64> = classes.iter().map(|c| c.volume_fraction.unwrap()).collect();
    assert!((shares.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{shares:?}");
    // b < 1: the volume is in the large blocks; class shares ∝ r^((1-b) k).
    assert!((shares[0] / shares[1] - ratio.powf(0.3)).abs() < 1e-9);
    let edge = |c: &talus_seed::config::Class| c.size[0] / c.size[2];
    assert!(classes.iter().all(|c| (edge(c) - 1.0 / 1.44).abs() < 1e-12));

    let s = seed(&config, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    println!("{}", s.summary);
    assert_disjoint(&s.blocks);
    assert_corners_inside(&s.blocks, &v, &o);
    let fill = s.summary.volume_to_fill;
    for (k, c) in s.summary.classes.iter().enumerate() {
        let each: f64 = c.size.iter().product();
        assert!(c.volume <= shares[k] * fill + each, "class {k} over its share: {c:?}");
        // Each block carries its class.
        let n = s.blocks.iter().filter(|b| b.class == k as u32).count();
        assert_eq!(n, c.blocks);
        assert!(s.blocks.iter().filter(|b| b.class == k as u32).all(|b| b.size == c.size));
    }
    assert!(s.summary.classes.iter().all(|c| c.blocks > 0));
    assert!(s.summary.fitted_exponent.is_some());
    assert!(s.summary.blocks as f64 <= config.block_bound(fill), "{}", s.summary.blocks);
}

#[test]
fn a_power_law_with_a_distribution_of_shapes_gives_each_shape_its_fraction_of_each_class() {
    use talus_seed::config::{ShapeShare, Sizes};
    let (v, o) = cliff(-0.7, 45.0);
    let (cube, slab) = ([1.0, 1.0, 1.0], [1.2, 1.0, 0.8]);
    let law = |shape: Option<[f64; 3]>, shapes: Vec<ShapeShare>| Config {
        sizes: Some(Sizes::PowerLaw {
            exponent: 0.7,
            min_volume: 20.0,
            max_volume: 2500.0,
            shape,
            shapes,
            classes: 3,
        }),
        ..Config::default()
    };
    let one = law(Some(cube), Vec::new()).classes();
    let mixed = law(
        None,
        vec![ShapeShare { ratio: cube, fraction: 0.6 }, ShapeShare { ratio: slab, fraction: 0.4 }],
    );
    let classes = mixed.classes();
    assert_eq!(classes.len(), 6);
    let vol = |c: &talus_seed::config::Class| c.size.iter().product::<f64>();
    for (k, single) in one.iter().enumerate() {
        let (a, b) = (&classes[2 * k], &classes[2 * k + 1]);
        // Both shapes at the volume class's volume, in the order given, splitting its share.
        assert!((vol(a) - vol(single)).abs() < 1e-9 * vol(single));
        assert!((vol(b) - vol(single)).abs() < 1e-9 * vol(single));
        let share = single.volume_fraction.unwrap();
        assert!((a.volume_fraction.unwrap() - 0.6 * share).abs() < 1e-12);
        assert!((b.volume_fraction.unwrap() - 0.4 * share).abs() < 1e-12);
        assert!((a.size[0] - a.size[2]).abs() < 1e-12, "a cube: {a:?}");
        assert!((b.size[0] / b.size[2] - 1.5).abs() < 1e-12);
        assert!((b.size[1] / b.size[2] - 1.25).abs() < 1e-12);
    }

    let s = seed(&mixed, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    println!("{}", s.summary);
    assert_disjoint(&s.blocks);
    assert_corners_inside(&s.blocks, &v, &o);
    assert_eq!(s.summary.classes.len(), 6);
    let fill = s.summary.volume_to_fill;
    for (k, c) in s.summary.classes.iter().enumerate() {
        assert!(s.blocks.iter().filter(|b| b.class == k as u32).all(|b| b.size == c.size));
        let each: f64 = c.size.iter().product();
        let share = classes[k].volume_fraction.unwrap();
        assert!(c.volume <= share * fill + each, "class {k} over its share: {c:?}");
        assert!(c.volume >= 0.0 && c.volume.is_sign_positive(), "{c:?}");
    }
    // Blocks of both shapes are placed (the second shape fills what the first left).
    let placed =
        |first: usize| (first..6).step_by(2).map(|k| s.summary.classes[k].blocks).sum::<usize>();
    assert!(placed(0) > 0 && placed(1) > 0, "{}", s.summary);

    for (shape, shapes, says) in [
        (Some(cube), vec![ShapeShare { ratio: slab, fraction: 1.0 }], "not both"),
        (None, Vec::new(), "needs shape"),
        (None, vec![ShapeShare { ratio: cube, fraction: 0.5 }], "add up to 1"),
        (None, vec![ShapeShare { ratio: [1.0, 0.0, 1.0], fraction: 1.0 }], "> 0"),
        (
            None,
            (0..5).map(|_| ShapeShare { ratio: cube, fraction: 0.2 }).collect(),
            "15 classes, more than 12",
        ),
    ] {
        let e = seed(&law(shape, shapes), &v, Some(&o), Path::new("d"), &NoProgress)
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{e}");
    }
}

#[test]
fn the_fitted_exponent_recovers_an_exact_power_law() {
    // Classes at V = 1000, 100, 10 m³ whose cumulative counts follow N(≥ V) = 1e9 V^-0.8
    // (to the unit: the counts are large, so rounding does not bias the fit).
    let cumulative = |v: f64| (1e9 * v.powf(-0.8)).round() as usize;
    let class = |v: f64, blocks: usize| talus_seed::ClassCount {
        size: [v.cbrt(); 3],
        blocks,
        volume: v * blocks as f64,
        thickness: [v.cbrt(); 2],
        volume_fraction_target: None,
    };
    let (n1, n2, n3) = (cumulative(1000.0), cumulative(100.0), cumulative(10.0));
    let classes = [class(1000.0, n1), class(100.0, n2 - n1), class(10.0, n3 - n2)];
    let b = talus_seed::fitted_exponent(&classes).unwrap();
    assert!((b - 0.8).abs() < 1e-6, "{b}");
    // One class with blocks: nothing to fit.
    assert_eq!(talus_seed::fitted_exponent(&[class(1000.0, 5), class(10.0, 0)]), None);
    // A volume class split between two shapes (a power law's `shapes`) counts as one.
    let slab = |blocks: usize| talus_seed::ClassCount {
        size: [10.0, 5.0, 2.0],
        blocks,
        volume: 100.0 * blocks as f64,
        thickness: [2.0; 2],
        volume_fraction_target: None,
    };
    let third = (n2 - n1) / 3;
    let split =
        [class(1000.0, n1), class(100.0, n2 - n1 - third), slab(third), class(10.0, n3 - n2)];
    let b_split = talus_seed::fitted_exponent(&split).unwrap();
    assert!((b_split - b).abs() < 1e-12, "{b_split} against {b}");
}

#[test]
fn bad_voids_are_clear_errors() {
    let grid = GridGeometry { x0: 0.0, y0: 0.0, cell: 1.0, nx: 20, ny: 20 };
    let rect = [[2.0, 2.0], [12.0, 2.0], [12.0, 12.0], [2.0, 12.0]];
    let (v, o) = make_void(grid, |_, _| 10.0, |_, _| 0.0, &rect);
    let big = Config { size: [11.0, 3.0, 3.0], azimuth: Some(0.0), ..Config::default() };
    let e = seed(&big, &v, Some(&o), Path::new("d"), &NoProgress).unwrap_err();
    assert!(matches!(e, Error::NothingFits { .. }), "{e}");
    assert!(e.to_string().contains("smaller blocks"));
    let tall = Config { size: [3.0, 3.0, 10.5], ..Config::default() };
    assert!(matches!(
        seed(&tall, &v, Some(&o), Path::new("d"), &NoProgress),
        Err(Error::NothingFits { .. })
    ));
    for bad in [
        Config { size: [0.0, 1.0, 1.0], ..Config::default() },
        Config { density: -1.0, ..Config::default() },
        Config { extra_sizes: vec![[1.0, f64::NAN, 1.0]], ..Config::default() },
    ] {
        assert!(matches!(
            seed(&bad, &v, Some(&o), Path::new("d"), &NoProgress),
            Err(Error::Config(_))
        ));
    }
    use talus_seed::config::{SizeClass, Sizes};
    let class = |size: [f64; 3], f: Option<f64>| SizeClass { size, volume_fraction: f };
    for (bad, says) in [
        (
            Config {
                size: [2.0, 2.0, 2.0],
                sizes: Some(Sizes::Classes { classes: vec![class([1.0; 3], None)] }),
                ..Config::default()
            },
            "either `size`/`extra_sizes` or `sizes`",
        ),
        (
            Config {
                sizes: Some(Sizes::Classes {
                    classes: vec![class([2.0; 3], Some(0.7)), class([1.0; 3], Some(0.6))],
                }),
                ..Config::default()
            },
            "more than 1",
        ),
        (
            Config {
                sizes: Some(Sizes::PowerLaw {
                    exponent: 0.8,
                    min_volume: 10.0,
                    max_volume: 5.0,
                    shape: Some([1.0; 3]),
                    shapes: Vec::new(),
                    classes: 3,
                }),
                ..Config::default()
            },
            "min_volume < max_volume",
        ),
    ] {
        let e = seed(&bad, &v, Some(&o), Path::new("d"), &NoProgress).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    // Empty scar.
    let (e_v, e_o) =
        make_void(grid, |_, _| 10.0, |_, _| 0.0, &[[50.0, 50.0], [60.0, 50.0], [60.0, 60.0]]);
    assert!(matches!(
        seed(&Config::default(), &e_v, Some(&e_o), Path::new("d"), &NoProgress),
        Err(Error::EmptyScar { .. })
    ));
    // Crossing surfaces: a few cells are a warning with their count, many an error.
    let (c_v, c_o) = make_void(grid, |_, _| 10.0, |x, _| if x < 3.0 { 11.0 } else { 0.0 }, &rect);
    let small = Config { size: [2.0, 2.0, 3.0], ..Config::default() };
    let e = seed(&small, &c_v, Some(&c_o), Path::new("d"), &NoProgress).unwrap_err();
    assert!(matches!(e, Error::Crossing { crossing: 10, cells: 100, .. }), "{e}");
    let lenient = Config { max_crossing_fraction: 0.2, ..small };
    let s = seed(&lenient, &c_v, Some(&c_o), Path::new("d"), &NoProgress).unwrap();
    assert_eq!(s.summary.crossing_cells, 10);
}

fn write_diff(
    dir: &Path,
    v: &Void,
    polygon: &[[f64; 2]],
    kind: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let g = v.grid;
    let n = g.nx * g.ny;
    let f = |vals: Vec<f64>| -> ArrayRef { Arc::new(Float64Array::from(vals)) };
    let rows: Vec<u32> = (0..n).map(|i| (i / g.nx) as u32).collect();
    let cols: Vec<u32> = (0..n).map(|i| (i % g.nx) as u32).collect();
    let dz: Vec<f64> = (0..n).map(|i| v.z_post[i] - v.z_pre[i]).collect();
    let batch = RecordBatch::try_new(
        Arc::new(talus_schema::diff::dod_schema()),
        vec![
            Arc::new(UInt32Array::from(rows.clone())),
            Arc::new(UInt32Array::from(cols.clone())),
            f((0..n).map(|i| v.centre(rows[i] as usize, cols[i] as usize)[0]).collect()),
            f((0..n).map(|i| v.centre(rows[i] as usize, cols[i] as usize)[1]).collect()),
            f(v.z_pre.clone()),
            f(v.z_post.clone()),
            f(dz),
            f(vec![0.1; n]),
            f(vec![0.2; n]),
            Arc::new(BooleanArray::from(vec![true; n])),
            Arc::new(UInt32Array::from(vec![5; n])),
            Arc::new(UInt32Array::from(vec![5; n])),
            Arc::new(Int32Array::from(vec![-1; n])),
        ],
    )
    .unwrap();
    let grid = serde_json::to_string(&g).unwrap();
    let crs = Some(talus_io::Crs::from_epsg(32620));
    let prov = talus_io::Provenance::new("diff", "0", &0)
        .with_crs(crs.clone())
        .with_extra(talus_schema::diff::GRID_KEY, grid);
    let dod = dir.join("dod.parquet");
    talus_io::write_parquet(&dod, batch.schema(), &[batch], &prov).unwrap();
    let zb = RecordBatch::try_new(
        Arc::new(talus_schema::diff::zones_schema()),
        vec![
            Arc::new(Int32Array::from(vec![1])),
            Arc::new(StringArray::from(vec![kind])),
            f(vec![1.0]),
            f(vec![1.0]),
            f(vec![0.1]),
            Arc::new(UInt32Array::from(vec![1])),
            f(vec![0.0]),
            f(vec![0.0]),
            f(vec![0.0]),
            f(vec![0.0]),
            Arc::new(BinaryArray::from_vec(vec![
                &talus_io::geo::wkb_polygon(&[polygon.to_vec()])[..],
            ])),
        ],
    )
    .unwrap();
    let zones = dir.join("zones.parquet");
    talus_io::write_parquet(
        &zones,
        zb.schema(),
        &[zb],
        &talus_io::Provenance::new("diff", "0", &0).with_crs(crs),
    )
    .unwrap();
    (dod, zones)
}

#[test]
fn stage_reads_the_diff_and_writes_geoparquet_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let grid = GridGeometry { x0: 1000.0, y0: 2000.0, cell: 1.0, nx: 40, ny: 30 };
    let rect = [[1005.0, 2005.0], [1017.0, 2005.0], [1017.0, 2011.0], [1005.0, 2011.0]];
    let (v, _) = make_void(grid, |_, _| 110.0, |_, _| 100.0, &rect);
    let (dod, zones) = write_diff(dir.path(), &v, &rect, "scar");
    let out = dir.path().join("blocks.parquet");
    let config = Config { size: [4.0, 3.0, 5.0], azimuth: Some(0.0), ..Config::default() };
    let s = talus_seed::run(
        &config,
        &dod,
        &zones,
        None,
        &out,
        Some(&dir.path().join("thesis")),
        &NoProgress,
    )
    .unwrap();
    assert_eq!((s.blocks, s.fill_fraction), (12, 1.0));
    let t = talus_io::read_table(&out, &talus_schema::blocks::schema()).unwrap();
    assert_eq!(t.num_rows(), 12);
    let geo: serde_json::Value = serde_json::from_str(&t.metadata["geo"]).unwrap();
    assert_eq!(geo["columns"]["geometry"]["crs"]["id"]["code"], 32620);
    assert!(
        t.f64s("vx").unwrap().iter().all(|v| *v == 0.0)
            && t.bools("active").unwrap().iter().all(|a| *a)
    );
    let mass = t.f64s("mass").unwrap();
    assert!((mass[0] - 2700.0 * 60.0).abs() < 1e-9);
    let (back, _) = talus_seed::read_blocks(&out).unwrap();
    assert_disjoint(&back);
    assert!(dir.path().join("thesis/size_12.data").exists());
    // No scar zone: clear error and no output.
    let (dod2, zones2) = {
        let d = dir.path().join("noscar");
        std::fs::create_dir_all(&d).unwrap();
        write_diff(&d, &v, &rect, "deposit")
    };
    let out2 = dir.path().join("blocks2.parquet");
    let e = talus_seed::run(&config, &dod2, &zones2, None, &out2, None, &NoProgress)
        .unwrap_err()
        .to_string();
    assert!(e.contains("zones.parquet") && e.contains("scar"), "{e}");
    assert!(!out2.exists());
}

/// Largest height of the TIN over a block's footprint, estimated independently of the
/// seeding code: TIN vertices inside the footprint and a dense 81 x 81 sample of it.
fn tin_top_under(tin: &talus_terrain::Tin, b: &Block) -> f64 {
    let az = b.orientation.euler_angles().2;
    let (e1, e2) = ([az.cos(), az.sin()], [-az.sin(), az.cos()]);
    let (h1, h2) = (0.5 * b.size[0], 0.5 * b.size[1]);
    let mut top = f64::NEG_INFINITY;
    for v in &tin.vertices {
        let d = [v[0] - b.centre[0], v[1] - b.centre[1]];
        if (d[0] * e1[0] + d[1] * e1[1]).abs() <= h1 && (d[0] * e2[0] + d[1] * e2[1]).abs() <= h2 {
            top = top.max(v[2]);
        }
    }
    for i in 0..=80 {
        for j in 0..=80 {
            let (s, t) = (i as f64 / 40.0 - 1.0, j as f64 / 40.0 - 1.0);
            let x = b.centre[0] + s * h1 * e1[0] + t * h2 * e2[0];
            let y = b.centre[1] + s * h1 * e1[1] + t * h2 * e2[1];
            if let Some(z) = tin.interpolate(x, y) {
                top = top.max(z);
            }
        }
    }
    top
}

#[test]
fn blocks_clear_the_post_event_tin() {
    // DoD floor flat at 100 m, ceiling 125 m (4 blocks of 6 m per column); the TIN is
    // 0.4 m above the DoD floor, with two humps (3 and 2.2 m) the DoD grid misses: the
    // columns over a hump hold 3 blocks.
    let grid = GridGeometry { x0: 0.0, y0: 0.0, cell: 2.0, nx: 20, ny: 20 };
    let rect = [[2.0, 2.0], [38.0, 2.0], [38.0, 38.0], [2.0, 38.0]];
    let (v, o) = make_void(grid, |_, _| 125.0, |_, _| 100.0, &rect);
    let mut pts = Vec::new();
    for i in 0..=16 {
        for j in 0..=16 {
            let (x, y) = (i as f64 * 2.5, j as f64 * 2.5);
            pts.push([x, y, 100.4]);
        }
    }
    pts.push([21.3, 17.1, 103.0]);
    pts.push([9.1, 30.7, 102.2]);
    let tin = talus_terrain::Tin::delaunay(pts).unwrap();
    let floor = talus_seed::void::TinFloor::new(tin.clone(), 7.0);
    for azimuth in [0.0, 30.0] {
        let config = Config {
            size: [4.0, 3.0, 6.0],
            azimuth: Some(azimuth),
            clearance: 0.01,
            ..Config::default()
        };
        let plain = seed(&config, &v, Some(&o), Path::new("dod"), &NoProgress).unwrap();
        let below = plain
            .blocks
            .iter()
            .filter(|b| b.centre[2] - 0.5 * b.size[2] < tin_top_under(&tin, b))
            .count();
        assert!(below > 0, "the DoD floor alone already clears the TIN: the test proves nothing");
        let s = talus_seed::seed_above(
            &config,
            &v,
            Some(&o),
            Some(&floor),
            Path::new("dod"),
            &NoProgress,
        )
        .unwrap();
        assert_eq!(s.summary.volume_to_fill, plain.summary.volume_to_fill);
        assert_disjoint(&s.blocks);
        assert_corners_inside(&s.blocks, &v, &o);
        for (k, b) in s.blocks.iter().enumerate() {
            let bottom = b.centre[2] - 0.5 * b.size[2];
            let top = tin_top_under(&tin, b);
            assert!(
                bottom >= top + 0.01 - 1e-9,
                "block {k}: bottom {bottom} below the TIN ({top})"
            );
        }
        // The humps cost a block per column over them; elsewhere columns keep 4.
        assert!(s.blocks.len() < plain.blocks.len() && s.blocks.len() + 20 > plain.blocks.len());
        println!(
            "azimuth {azimuth}°: {} blocks ({} without the TIN)",
            s.blocks.len(),
            plain.blocks.len()
        );
    }
}

#[test]
fn effective_ceiling_closed_forms() {
    use talus_seed::void::effective_ceiling;
    // Wholly inside: the lowest pre-event height.
    assert_eq!(effective_ceiling(&[3.0, 1.0, 2.0], 10.0, 1.0), 1.0);
    // Cells at 0 and 10, c = 10, f = 0.75: φ(T) = (20 − T)/20 on [0, 10], so T = 5
    // (block [−5, 5]: half inside over the first cell, wholly over the second).
    assert!((effective_ceiling(&[0.0, 10.0], 10.0, 0.75) - 5.0).abs() < 1e-9);
    // One cell: φ(T) = (z − T + c)/c, so T = z + (1 − f) c.
    assert!((effective_ceiling(&[7.0], 4.0, 0.25) - 10.0).abs() < 1e-9);
    // Monotone in f.
    let z = [0.0, 2.0, 9.0, 4.0];
    let t: Vec<f64> = [1.0, 0.9, 0.6, 0.3].iter().map(|&f| effective_ceiling(&z, 6.0, f)).collect();
    assert!(t.windows(2).all(|w| w[0] < w[1]), "{t:?}");
}

/// `min_inside = 0.5` on the cliff scar: more blocks than strict containment, still
/// disjoint, none below the post-event surface, and (sampled over each footprint, area
/// weighted) about half or more of each block below the pre-event surface.
#[test]
fn partial_containment_seeds_more_and_keeps_its_fraction_inside() {
    let (v, o) = cliff(30f64.to_radians(), 60.0);
    let strict = seed(&Config::default(), &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    let half = Config { min_inside: 0.5, ..Config::default() };
    let s = seed(&half, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    println!(
        "strict {} blocks ({:.3}), min_inside 0.5: {} blocks ({:.3})",
        strict.summary.blocks,
        strict.summary.fill_fraction,
        s.summary.blocks,
        s.summary.fill_fraction
    );
    assert!(s.summary.blocks as f64 > 1.2 * strict.summary.blocks as f64);
    assert!(s.summary.blocks as f64 <= half.block_bound(s.summary.volume_to_fill));
    assert_disjoint(&s.blocks);
    let g = v.grid;
    let cell_of = |x: f64, y: f64| {
        let c = ((x - g.x0) / g.cell).floor() as usize;
        let r = ((y - g.y0) / g.cell).floor() as usize;
        r * g.nx + c
    };
    let mut worst = f64::INFINITY;
    for (k, b) in s.blocks.iter().enumerate() {
        let r = b.axes();
        let (bottom, c) = (b.centre[2] - 0.5 * b.size[2], b.size[2]);
        let mut inside = 0.0;
        let m = 24;
        for i in 0..m {
            for j in 0..m {
                let (u, w) = ((i as f64 + 0.5) / m as f64 - 0.5, (j as f64 + 0.5) / m as f64 - 0.5);
                let x = b.centre[0] + u * b.size[0] * r[(0, 0)] + w * b.size[1] * r[(0, 1)];
                let y = b.centre[1] + u * b.size[0] * r[(1, 0)] + w * b.size[1] * r[(1, 1)];
                let i = cell_of(x, y);
                assert!(v.fillable[i], "block {k} leaves the scar");
                assert!(bottom >= v.z_post[i] - 1e-6, "block {k} below the post-event surface");
                inside += (v.z_pre[i] - bottom).clamp(0.0, c) / c;
            }
        }
        worst = worst.min(inside / (m * m) as f64);
    }
    println!("least sampled fraction inside: {worst:.3}");
    assert!(worst > 0.4, "{worst}");
}
