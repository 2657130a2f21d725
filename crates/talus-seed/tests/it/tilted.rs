//! Seeding on the scar's floor (`orientation = "scar_floor"`): blocks in the frame of the
//! plane fitted to the post-event surface, wholly inside the void between the surfaces
//! interpolated linearly between cell centres, disjoint, and clear of the terrain TIN.

use crate::seed::{assert_disjoint, cliff, make_void};
use std::path::Path;
use talus_io::NoProgress;
use talus_seed::boxes::Block;
use talus_seed::config::Orientation;
use talus_seed::void::{GridGeometry, Outline, TinFloor, Void};
use talus_seed::{Config, seed, seed_above};

/// The surface linearly interpolated between the centres of `v`'s cells, on the two
/// triangles (r, c)-(r, c+1)-(r+1, c+1) and (r, c)-(r+1, c+1)-(r+1, c) of each square:
/// evaluated at a point, independently of the seeder's clipping.
fn pl(v: &Void, z: &[f64], x: f64, y: f64) -> Option<f64> {
    let g = v.grid;
    let (s, t) = ((x - g.x0) / g.cell - 0.5, (y - g.y0) / g.cell - 0.5);
    let (c, r) = (s.floor(), t.floor());
    if c < 0.0 || r < 0.0 || c as usize + 1 >= g.nx || r as usize + 1 >= g.ny {
        return None;
    }
    let (c, r, fs, ft) = (c as usize, r as usize, s - c, t - r);
    let at = |rr: usize, cc: usize| z[rr * g.nx + cc];
    let (z00, z10, z01, z11) = (at(r, c), at(r, c + 1), at(r + 1, c), at(r + 1, c + 1));
    Some(if fs >= ft {
        z00 + fs * (z10 - z00) + ft * (z11 - z10)
    } else {
        z00 + ft * (z01 - z00) + fs * (z11 - z01)
    })
}

/// Points on every face of `b` (an 11 x 11 grid each).
fn face_points(b: &Block) -> Vec<[f64; 3]> {
    let r = b.axes();
    let mut out = Vec::new();
    for axis in 0..3 {
        let (p, q) = ((axis + 1) % 3, (axis + 2) % 3);
        for side in [-0.5, 0.5] {
            for i in 0..=10 {
                for j in 0..=10 {
                    let mut l = [0.0; 3];
                    l[axis] = side * b.size[axis];
                    l[p] = (i as f64 / 10.0 - 0.5) * b.size[p];
                    l[q] = (j as f64 / 10.0 - 0.5) * b.size[q];
                    let w = r * nalgebra::Vector3::from(l);
                    out.push([b.centre[0] + w.x, b.centre[1] + w.y, b.centre[2] + w.z]);
                }
            }
        }
    }
    out
}

/// Every face point of every block between the interpolated surfaces and in the scar.
fn assert_inside(blocks: &[Block], v: &Void, o: &Outline) {
    for (k, b) in blocks.iter().enumerate() {
        for p in face_points(b) {
            assert!(o.contains(p[0], p[1], 1e-6), "block {k}: {p:?} outside the scar");
            let lo = pl(v, &v.z_post, p[0], p[1]).expect("on the grid");
            let hi = pl(v, &v.z_pre, p[0], p[1]).expect("on the grid");
            assert!(p[2] >= lo - 1e-6 && p[2] <= hi + 1e-6, "block {k}: {p:?} not in [{lo}, {hi}]");
        }
    }
}

#[test]
fn a_slab_on_a_slope_is_paved_in_layers_parallel_to_it() {
    // A slab 12 m thick (normal to it) on a 45° slope rising to the north, over a
    // 60 m wide strip; blocks of c = 4 m lie in three layers.
    let grid = GridGeometry { x0: 0.0, y0: 0.0, cell: 2.0, nx: 60, ny: 60 };
    let post = |_: f64, y: f64| y;
    let pre = |_: f64, y: f64| y + 12.0 * 2f64.sqrt();
    let rect = [[20.0, 20.0], [80.0, 20.0], [80.0, 100.0], [20.0, 100.0]];
    let (v, o) = make_void(grid, pre, post, &rect);
    let size = [6.0, 5.0, 4.0];
    let upright = Config { size, azimuth: Some(0.0), ..Config::default() };
    let up = seed(&upright, &v, Some(&o), Path::new("slab"), &NoProgress).unwrap();
    let floor = Config { size, orientation: Orientation::ScarFloor, ..Config::default() };
    let s = seed(&floor, &v, Some(&o), Path::new("slab"), &NoProgress).unwrap();
    println!("upright {}\nfloor {}", up.summary, s.summary);
    let [dip, dir] = s.summary.floor_dip_deg.unwrap();
    assert!((dip - 45.0).abs() < 1e-9 && (dir - 180.0).abs() < 1e-9, "{dip} {dir}");
    assert!((s.summary.azimuth_deg - 0.0).abs() < 1e-9, "{}", s.summary.azimuth_deg);
    assert_disjoint(&s.blocks);
    assert_inside(&s.blocks, &v, &o);
    // Edge c along the normal (0, -1, 1)/√2, edge a along x.
    for b in &s.blocks {
        let r = b.axes();
        assert!((r[(0, 0)] - 1.0).abs() < 1e-12);
        let h = std::f64::consts::FRAC_1_SQRT_2;
        assert!((r[(1, 2)] + h).abs() < 1e-12 && (r[(2, 2)] - h).abs() < 1e-12);
    }
    // Every block is in one of three layers at w = 2, 6, 10 m above the floor plane:
    // its centre is (2 + 4k)·n above the plane z = y.
    for b in &s.blocks {
        let w = (b.centre[2] - b.centre[1]) * std::f64::consts::FRAC_1_SQRT_2;
        let k = ((w - 2.0 - floor.clearance) / 4.0).round();
        assert!((0.0..=2.0).contains(&k) && (w - 2.0 - 4.0 * k).abs() < 1e-6, "w = {w}");
    }
    let layer = |b: &Block| {
        let w = (b.centre[2] - b.centre[1]) * std::f64::consts::FRAC_1_SQRT_2;
        ((w - 2.0) / 4.0).round() as usize
    };
    let mut counts = [0usize; 3];
    for b in &s.blocks {
        counts[layer(b)] += 1;
    }
    // Ten columns (60 m / 6 m) along the strike in every row. Along the dip a column is
    // kept when its floor and ceiling stay over the scar: (v − 12)/√2 and v/√2 within its
    // 80 m, 101.1 m of v, less up to a 2 m cell at each end: at least 18 rows of 5 m, the
    // same in each layer.
    assert!(counts.iter().all(|n| n % 10 == 0 && *n >= 180 && *n == counts[0]), "{counts:?}");
    assert!(s.summary.fill_fraction > up.summary.fill_fraction + 0.05);
    // The resampled void bounds what the blocks fill, and is at most the DoD's volume
    // (the slab's ends are cut where its columns leave the scar).
    let floor_void = s.summary.floor_void_volume.unwrap();
    assert!(floor_void >= s.summary.seeded_volume && floor_void <= s.summary.volume_to_fill);
}

#[test]
fn a_curved_cliff_scar_is_filled_inside_both_surfaces_and_above_the_tin() {
    // The cliff of the upright tests: a 56° face with a lens-shaped scar up to 45 m
    // thick, here with a TIN 0.5 m above the DoD's floor and a 4 m hump it misses.
    let face = -0.7f64;
    let (v, o) = cliff(face, 45.0);
    // The cliff's post-event surface (as `cliff` builds it).
    let post = move |x: f64, y: f64| 500.0 - 1.5 * (x * face.cos() + y * face.sin());
    let mut pts = Vec::new();
    for i in 0..=80 {
        for j in 0..=80 {
            let (x, y) = (-200.0 + 5.0 * i as f64, -200.0 + 5.0 * j as f64);
            pts.push([x, y, post(x, y) + 0.5]);
        }
    }
    pts.push([10.3, 20.1, post(10.3, 20.1) + 4.0]);
    let tin = talus_terrain::Tin::delaunay(pts).unwrap();
    let floor = TinFloor::new(tin.clone(), 10.0);
    let upright = Config { extra_sizes: vec![[5.0, 4.5, 7.5]], subdivide: 2, ..Config::default() };
    let up = seed_above(&upright, &v, Some(&o), Some(&floor), Path::new("c"), &NoProgress).unwrap();
    let config = Config {
        size: [15.775, 10.935, 9.636],
        extra_sizes: vec![[7.5, 5.0, 4.5]],
        orientation: Orientation::ScarFloor,
        subdivide: 2,
        clearance: 0.01,
        ..Config::default()
    };
    let s = seed_above(&config, &v, Some(&o), Some(&floor), Path::new("c"), &NoProgress).unwrap();
    println!("upright {}\nfloor {}", up.summary, s.summary);
    assert!(s.summary.classes.iter().all(|c| c.blocks > 0));
    assert_disjoint(&s.blocks);
    assert_inside(&s.blocks, &v, &o);
    for (k, b) in s.blocks.iter().enumerate() {
        for p in face_points(b) {
            let t = tin.interpolate(p[0], p[1]).expect("the TIN covers the scar");
            assert!(p[2] >= t + 0.01 - 1e-6, "block {k}: {p:?} below the TIN ({t})");
        }
    }
    // The hump is under the scar: without the TIN some block would reach into it.
    let plain = seed(&config, &v, Some(&o), Path::new("c"), &NoProgress).unwrap();
    let into_tin = plain.blocks.iter().any(|b| {
        face_points(b).iter().any(|p| p[2] < tin.interpolate(p[0], p[1]).unwrap() + 0.01 - 1e-6)
    });
    assert!(into_tin, "the DoD's floor alone already clears the TIN: the test proves nothing");
    assert!(s.summary.fill_fraction > up.summary.fill_fraction);
    // Fitted thickness: the same footprints reach their ceilings, so more is filled, every
    // block still inside both surfaces and above the TIN, each c from the class's c to 2c
    // (the default range).
    let fit = Config { thickness: talus_seed::pack::Thickness::Fit, ..config.clone() };
    let t = seed_above(&fit, &v, Some(&o), Some(&floor), Path::new("c"), &NoProgress).unwrap();
    println!("fitted {}", t.summary);
    assert!(t.summary.fill_fraction > s.summary.fill_fraction + 0.02);
    assert_disjoint(&t.blocks);
    assert_inside(&t.blocks, &v, &o);
    for (k, b) in t.blocks.iter().enumerate() {
        let c = [9.636, 4.5][b.class as usize];
        assert!(
            b.size[2] >= c - 1e-9 && b.size[2] <= 2.0 * c + 1e-9,
            "block {k}: c = {}",
            b.size[2]
        );
        for p in face_points(b) {
            let z = tin.interpolate(p[0], p[1]).expect("the TIN covers the scar");
            assert!(p[2] >= z + 0.01 - 1e-6, "block {k}: {p:?} below the TIN ({z})");
        }
    }
    assert!(t.blocks.iter().any(|b| b.size[2] > 9.636 + 1.0), "no block was fitted thicker");
}

#[test]
fn scar_floor_refuses_partial_containment_and_an_azimuth() {
    let base = Config { orientation: Orientation::ScarFloor, ..Config::default() };
    let e = Config { min_inside: 0.5, ..base.clone() }.validate().unwrap_err().to_string();
    assert!(e.contains("min_inside") && e.contains("scar_floor"), "{e}");
    let e = Config { azimuth: Some(10.0), ..base }.validate().unwrap_err().to_string();
    assert!(e.contains("azimuth") && e.contains("scar_floor"), "{e}");
}

#[test]
fn on_a_flat_floor_the_floor_paving_is_the_upright_one() {
    // A flat box-shaped void 12 x 6 x 10 m: the floor plane is horizontal, its strike
    // falls back to east, and blocks that divide the box fill it exactly, as upright.
    let grid = GridGeometry { x0: 0.0, y0: 0.0, cell: 1.0, nx: 40, ny: 30 };
    let rect = [[5.0, 5.0], [17.0, 5.0], [17.0, 11.0], [5.0, 11.0]];
    let (v, o) = make_void(grid, |_, _| 110.0, |_, _| 100.0, &rect);
    let config =
        Config { size: [4.0, 3.0, 5.0], orientation: Orientation::ScarFloor, ..Config::default() };
    let s = seed(&config, &v, Some(&o), Path::new("box"), &NoProgress).unwrap();
    assert_eq!(s.summary.floor_dip_deg.map(|d| d[0]), Some(0.0));
    assert_eq!(s.summary.blocks, 12);
    assert_eq!(s.summary.floor_void_volume, Some(720.0));
    assert!((s.summary.fill_fraction - 1.0).abs() < 1e-12, "{}", s.summary.fill_fraction);
    assert_disjoint(&s.blocks);
    assert_inside(&s.blocks, &v, &o);
    for b in &s.blocks {
        assert!((b.axes() - nalgebra::Matrix3::identity()).norm() < 1e-12);
    }
}
