//! The members of the ensemble: which value each parameter takes in member i, and the
//! member's site file.
//!
//! * Member seed: `s_i = SplitMix64(seed ⊕ SplitMix64(i))`; member i's random stream is
//!   ChaCha8 seeded with `s_i`, so it depends on nothing but (seed, i).
//! * Grid: member i is the mixed-radix decomposition of i over the parameters' levels,
//!   the first parameter varying slowest.
//! * Random: parameter d of member i is `Q_d(u)`, u the d-th draw of the member's stream,
//!   `Q_d` the parameter's quantile function (uniform on its linear or log scale, or over
//!   its list of values).
//! * Latin hypercube (McKay et al. 1979): with n = samples, parameter d has a permutation
//!   π_d of 0..n drawn from a stream seeded by (seed, d); member i takes
//!   `Q_d((π_d(i) + u)/n)`, u the d-th draw of the member's stream. Each of the n strata
//!   of each parameter is used exactly once.
//! * Replicates: with `replicates = R`, member i runs point ⌊i / R⌋ of the above (its
//!   values and seed are that point's) as replicate i mod R; replicate r > 0 perturbs the
//!   run's initial velocities (`[run] perturbation`, seed r). With R = 1 member i is
//!   point i.

use crate::config::{Config, Search, Spec};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One varied parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// Column name in the runs table (`restitution`, `block_scale`, or the dotted key).
    pub name: String,
    /// Dotted key in the site file (`block_scale` scales `seed.size`).
    pub key: String,
    /// Unit, for the report.
    pub unit: &'static str,
    pub spec: Spec,
}

/// The varied parameters in their fixed order: the named ones, then `keys` sorted.
pub fn parameters(config: &Config) -> Vec<Parameter> {
    let p = &config.parameters;
    let mut out = Vec::new();
    for (name, key, unit, spec) in [
        ("restitution", "run.kappa.e", "1", &p.restitution),
        ("tangential_ratio", "run.kappa.tangential_ratio", "1", &p.tangential_ratio),
        ("kappa_normal", "run.kappa.normal", "kg", &p.kappa_normal),
        ("kappa_tangential", "run.kappa.tangential", "kg", &p.kappa_tangential),
        ("block_scale", "seed.size", "1", &p.block_scale),
    ] {
        if let Some(spec) = spec {
            out.push(Parameter { name: name.into(), key: key.into(), unit, spec: spec.clone() });
        }
    }
    for (key, spec) in &p.keys {
        out.push(Parameter { name: key.clone(), key: key.clone(), unit: "", spec: spec.clone() });
    }
    out
}

/// One member of the ensemble.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Index, 0-based.
    pub index: usize,
    /// The point of the search (or the reference) it runs: `index / replicates`.
    pub point: usize,
    /// Which run of its point: `index % replicates` (0: unperturbed).
    pub replicate: usize,
    /// The point's seed `s_p`.
    pub seed: u64,
    /// One value per parameter, in the order of [`parameters`].
    pub values: Vec<f64>,
    /// The uncalibrated reference (`[calibrate] reference`), not a member of the search.
    pub reference: bool,
}

/// SplitMix64's output function (Steele, Lea, Flood 2014).
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of member i.
pub fn member_seed(seed: u64, index: usize) -> u64 {
    splitmix64(seed ^ splitmix64(index as u64))
}

/// Members in the ensemble: each point's replicates, the search's points, then the
/// reference's when there is one.
pub fn member_count(config: &Config) -> usize {
    point_count(config).saturating_mul(config.replicates)
}

/// Points: the search's, then the reference when there is one.
pub fn point_count(config: &Config) -> usize {
    search_count(config).saturating_add(usize::from(!config.reference.is_empty()))
}

/// Members of the search alone.
pub fn search_count(config: &Config) -> usize {
    match config.search {
        Search::Grid => parameters(config)
            .iter()
            .map(|p| p.spec.levels().len())
            .try_fold(1usize, |a, n| a.checked_mul(n))
            .unwrap_or(usize::MAX),
        Search::Random | Search::LatinHypercube => config.samples,
    }
}

/// Member `index` (which must be < [`member_count`]).
pub fn member(config: &Config, index: usize) -> Member {
    Sampler::new(config).member(index)
}

/// What every member's values are drawn from, computed once: the parameters, a grid's
/// levels and a Latin hypercube's permutations.
struct Sampler<'a> {
    config: &'a Config,
    params: Vec<Parameter>,
    levels: Vec<Vec<f64>>,
    perms: Vec<Vec<usize>>,
}

impl<'a> Sampler<'a> {
    fn new(config: &'a Config) -> Self {
        let params = parameters(config);
        let levels = match config.search {
            Search::Grid => params.iter().map(|p| p.spec.levels()).collect(),
            _ => Vec::new(),
        };
        let perms = match config.search {
            Search::LatinHypercube => (0..params.len())
                .map(|d| {
                    let mut perm: Vec<usize> = (0..config.samples).collect();
                    let mut prng = ChaCha8Rng::seed_from_u64(splitmix64(
                        config.seed ^ splitmix64(!(d as u64)),
                    ));
                    perm.shuffle(&mut prng);
                    perm
                })
                .collect(),
            _ => Vec::new(),
        };
        Sampler { config, params, levels, perms }
    }

    fn member(&self, index: usize) -> Member {
        let replicates = self.config.replicates.max(1);
        let (point, replicate) = (index / replicates, index % replicates);
        Member { index, replicate, ..self.point(point) }
    }

    /// Replicate 0 of `point`, with `index` = `point`.
    fn point(&self, point: usize) -> Member {
        let config = self.config;
        let seed = member_seed(config.seed, point);
        let index = point;
        if !config.reference.is_empty() && point == search_count(config) {
            let values = self.params.iter().map(|p| config.reference[&p.name]).collect();
            return Member { index, point, replicate: 0, seed, values, reference: true };
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let values = match config.search {
            Search::Grid => {
                let mut rest = point;
                let mut v = vec![0.0; self.levels.len()];
                for d in (0..self.levels.len()).rev() {
                    let n = self.levels[d].len();
                    v[d] = self.levels[d][rest % n];
                    rest /= n;
                }
                v
            }
            Search::Random => {
                self.params.iter().map(|p| p.spec.quantile(rng.random::<f64>())).collect()
            }
            Search::LatinHypercube => {
                let n = config.samples;
                self.params
                    .iter()
                    .zip(&self.perms)
                    .map(|(p, perm)| {
                        let u: f64 = rng.random();
                        p.spec.quantile((perm[point] as f64 + u) / n as f64)
                    })
                    .collect()
            }
        };
        Member { index, point, replicate: 0, seed, values, reference: false }
    }
}

/// A replicate's perturbation in its site file: `[run] perturbation = { speed, seed = r }`
/// for replicate r > 0; replicate 0 runs the site as given.
pub fn perturb(site: &mut toml::Table, member: &Member, speed: f64) -> Result<(), crate::Error> {
    if member.replicate == 0 {
        return Ok(());
    }
    let run = table_at(site, &["run"], "replicates")?;
    let mut p = toml::Table::new();
    p.insert("speed".into(), toml::Value::Float(speed));
    p.insert("seed".into(), toml::Value::Integer(member.replicate as i64));
    run.insert("perturbation".into(), toml::Value::Table(p));
    Ok(())
}

/// Every member, in order.
pub fn members(config: &Config) -> Vec<Member> {
    let sampler = Sampler::new(config);
    (0..member_count(config)).map(|i| sampler.member(i)).collect()
}

/// The blocks of the site's `[seed]` table, which `block_scale` multiplies.
#[derive(Debug, Clone, PartialEq)]
pub struct BaseBlocks {
    /// `seed.size`, m.
    pub size: [f64; 3],
    /// `seed.extra_sizes`, m.
    pub extra_sizes: Vec<[f64; 3]>,
}

/// The site file of a member: the site's table with each parameter's key set to the
/// member's value (an integer option stays an integer, rounded).
pub fn apply(
    site: &toml::Table,
    params: &[Parameter],
    member: &Member,
    base: &BaseBlocks,
) -> Result<toml::Table, crate::Error> {
    let mut out = site.clone();
    for (p, &v) in params.iter().zip(&member.values) {
        if p.name == "block_scale" {
            let arr = |s: [f64; 3]| {
                toml::Value::Array(s.iter().map(|x| toml::Value::Float(x * v)).collect())
            };
            let seed = table_at(&mut out, &["seed"], &p.name)?;
            seed.insert("size".into(), arr(base.size));
            if !base.extra_sizes.is_empty() {
                seed.insert(
                    "extra_sizes".into(),
                    toml::Value::Array(base.extra_sizes.iter().map(|s| arr(*s)).collect()),
                );
            }
            continue;
        }
        let parts: Vec<&str> = p.key.split('.').collect();
        let (last, path) = parts.split_last().expect("validated dotted key");
        let t = table_at(&mut out, path, &p.name)?;
        let value = match t.get(*last) {
            Some(toml::Value::Integer(_)) => toml::Value::Integer(v.round() as i64),
            _ => toml::Value::Float(v),
        };
        t.insert((*last).to_string(), value);
    }
    Ok(out)
}

/// The varied keys that the site file does not hold although their table holds others,
/// each as "`key` is not in the site file, whose `table` holds `a`, `b`": a member's
/// options then get the key beside the site's (e.g. a friction law's coefficient varied
/// beside another law), which is worth saying when they do not parse.
pub fn keys_added_beside(site: &toml::Table, params: &[Parameter]) -> Vec<String> {
    let mut notes = Vec::new();
    for p in params.iter().filter(|p| p.name != "block_scale") {
        let parts: Vec<&str> = p.key.split('.').collect();
        let Some((last, path)) = parts.split_last() else { continue };
        let mut t = Some(site);
        for seg in path {
            t = t.and_then(|t| t.get(*seg)).and_then(toml::Value::as_table);
        }
        if let Some(t) = t.filter(|t| !t.is_empty() && !t.contains_key(*last)) {
            let held: Vec<String> = t.keys().map(|k| format!("`{k}`")).collect();
            notes.push(format!(
                "`{}` is not in the site file, whose `{}` holds {}",
                p.key,
                path.join("."),
                held.join(", ")
            ));
        }
    }
    notes
}

fn table_at<'a>(
    root: &'a mut toml::Table,
    path: &[&str],
    name: &str,
) -> Result<&'a mut toml::Table, crate::Error> {
    let mut t = root;
    for seg in path {
        let entry =
            t.entry(seg.to_string()).or_insert_with(|| toml::Value::Table(Default::default()));
        t = entry.as_table_mut().ok_or_else(|| {
            crate::Error::Config(format!(
                "parameters.{name}: `{seg}` in the site file is not a table"
            ))
        })?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Parameters, Scale};

    fn range(lo: f64, hi: f64) -> Option<Spec> {
        Some(Spec { min: Some(lo), max: Some(hi), ..Spec::default() })
    }

    fn config(search: Search) -> Config {
        Config {
            search,
            samples: 10,
            seed: 42,
            parameters: Parameters {
                restitution: range(0.0, 0.5),
                block_scale: Some(Spec { values: vec![0.8, 1.0], ..Spec::default() }),
                keys: [(
                    "run.separation.beta".to_string(),
                    Spec { min: Some(0.01), max: Some(1.0), scale: Scale::Log, ..Spec::default() },
                )]
                .into(),
                ..Parameters::default()
            },
            ..Config::default()
        }
    }

    #[test]
    fn grid_is_the_cartesian_product_first_parameter_slowest() {
        let c = config(Search::Grid);
        let m = members(&c);
        assert_eq!(m.len(), 3 * 2 * 3);
        assert_eq!(m[0].values, vec![0.0, 0.8, 0.01]);
        assert_eq!(m[1].values[..2], [0.0, 0.8]);
        assert!((m[1].values[2] - 0.1).abs() < 1e-12, "{:?}", m[1]);
        assert_eq!(m[3].values[..2], [0.0, 1.0]);
        assert_eq!(m[6].values[0], 0.25);
        assert_eq!(m[17].values, vec![0.5, 1.0, 1.0]);
        // All combinations distinct.
        for i in 0..m.len() {
            for j in 0..i {
                assert_ne!(m[i].values, m[j].values);
            }
        }
    }

    #[test]
    fn sampling_is_deterministic_per_seed_and_member() {
        for search in [Search::Grid, Search::Random, Search::LatinHypercube] {
            let c = config(search);
            let all = members(&c);
            // A member computed alone equals the one of the whole ensemble.
            for i in [0, 3, 9] {
                assert_eq!(member(&c, i), all[i]);
                assert_eq!(all[i].seed, member_seed(42, i));
            }
            assert_eq!(members(&c), all);
            if search != Search::Grid {
                let other = Config { seed: 43, ..c.clone() };
                assert_ne!(members(&other), all, "{search:?}: seed has no effect");
            }
        }
        // Random: member i does not depend on the number of samples.
        let c = config(Search::Random);
        let more = Config { samples: 50, ..c.clone() };
        assert_eq!(member(&c, 7), member(&more, 7));
        // Seeds of neighbouring members differ.
        assert_ne!(member_seed(1, 0), member_seed(1, 1));
        assert_ne!(member_seed(1, 0), member_seed(2, 0));
    }

    #[test]
    fn latin_hypercube_uses_each_stratum_once() {
        let c = config(Search::LatinHypercube);
        let m = members(&c);
        let n = c.samples;
        // restitution: linear on [0, 0.5]; beta: log on [0.01, 1].
        let mut strata_e: Vec<usize> =
            m.iter().map(|x| (x.values[0] / 0.5 * n as f64).floor() as usize).collect();
        let mut strata_b: Vec<usize> = m
            .iter()
            .map(|x| ((x.values[2] / 0.01).ln() / 100f64.ln() * n as f64).floor() as usize)
            .collect();
        strata_e.sort();
        strata_b.sort();
        assert_eq!(strata_e, (0..n).collect::<Vec<_>>());
        assert_eq!(strata_b, (0..n).collect::<Vec<_>>());
        // A list of values: each value used n / len times.
        let k = m.iter().filter(|x| x.values[1] == 0.8).count();
        assert_eq!(k, n / 2);
    }

    /// The reference member comes last with the given values; the search's members do not
    /// change.
    #[test]
    fn the_reference_is_the_last_member() {
        let c = config(Search::LatinHypercube);
        let mut r = c.clone();
        r.reference = [
            ("restitution".to_string(), 0.05),
            ("block_scale".to_string(), 1.0),
            ("run.separation.beta".to_string(), 0.3),
        ]
        .into();
        r.validate().unwrap();
        let all = members(&r);
        assert_eq!(all.len(), c.samples + 1);
        assert_eq!(all[..c.samples], members(&c)[..]);
        let last = &all[c.samples];
        assert!(last.reference && !all[0].reference);
        assert_eq!(last.values, vec![0.05, 1.0, 0.3]);
    }

    /// With replicates, each point's members share its values and seed, replicate 0 of
    /// point p is member p of the unreplicated ensemble, the reference's replicates come
    /// last, and only replicates r > 0 carry `[run] perturbation` with seed r.
    #[test]
    fn replicates_run_each_point_with_its_values_and_perturb_all_but_the_first() {
        let mut c = config(Search::LatinHypercube);
        c.reference = [
            ("restitution".to_string(), 0.05),
            ("block_scale".to_string(), 1.0),
            ("run.separation.beta".to_string(), 0.3),
        ]
        .into();
        let single = members(&c);
        let r = Config { replicates: 3, ..c.clone() };
        r.validate().unwrap();
        let all = members(&r);
        assert_eq!(all.len(), 3 * (c.samples + 1));
        for (i, m) in all.iter().enumerate() {
            assert_eq!((m.index, m.point, m.replicate), (i, i / 3, i % 3));
            let p = &single[i / 3];
            assert_eq!((&m.values, m.seed, m.reference), (&p.values, p.seed, p.reference));
        }
        assert!(all[3 * c.samples].reference && !all[3 * c.samples - 1].reference);
        let site: toml::Table = "[run]\nsteps = 10\n".parse().unwrap();
        for (k, m) in all[6..9].iter().enumerate() {
            let mut t = site.clone();
            perturb(&mut t, m, 0.002).unwrap();
            match k {
                0 => assert_eq!(t, site),
                _ => {
                    let p = &t["run"]["perturbation"];
                    assert_eq!(p["speed"].as_float(), Some(0.002));
                    assert_eq!(p["seed"].as_integer(), Some(k as i64));
                    assert_eq!(t["run"]["steps"].as_integer(), Some(10));
                }
            }
        }
        // The perturbed site is a valid run configuration.
        let mut t = site.clone();
        perturb(&mut t, &all[7], 0.002).unwrap();
        let run: talus_engine::Config =
            t["run"].clone().try_into().expect("perturbation parses as [run]");
        assert_eq!(
            run.perturbation,
            Some(talus_engine::config::Perturbation { speed: 0.002, seed: 1 })
        );
    }

    #[test]
    fn random_values_stay_in_range_and_on_the_list() {
        let c = Config { samples: 200, ..config(Search::Random) };
        for m in members(&c) {
            assert!((0.0..=0.5).contains(&m.values[0]));
            assert!(m.values[1] == 0.8 || m.values[1] == 1.0);
            assert!((0.01..=1.0).contains(&m.values[2]));
        }
    }

    #[test]
    fn apply_sets_the_keys_and_scales_the_blocks() {
        let c = config(Search::Grid);
        let site: toml::Table = "[site]\nname = 'x'\n[run]\nkappa = { mode = 'restitution', e = 0.1, tangential_ratio = 1.0 }\nsteps = 10\n[seed]\nsize = [1.0, 2.0, 3.0]\n"
            .parse()
            .unwrap();
        let base = BaseBlocks { size: [1.0, 2.0, 3.0], extra_sizes: vec![[0.5, 0.5, 0.5]] };
        let m = member(&c, 17);
        let out = apply(&site, &parameters(&c), &m, &base).unwrap();
        assert_eq!(out["run"]["kappa"]["e"].as_float(), Some(0.5));
        assert_eq!(out["run"]["kappa"]["tangential_ratio"].as_float(), Some(1.0));
        assert_eq!(out["run"]["separation"]["beta"].as_float(), Some(1.0));
        assert_eq!(out["run"]["steps"].as_integer(), Some(10));
        assert_eq!(out["seed"]["size"].as_array().unwrap()[2].as_float(), Some(3.0));
        assert_eq!(out["seed"]["extra_sizes"][0][0].as_float(), Some(0.5));
        let m = member(&c, 0);
        let out = apply(&site, &parameters(&c), &m, &base).unwrap();
        let size: Vec<f64> =
            out["seed"]["size"].as_array().unwrap().iter().map(|v| v.as_float().unwrap()).collect();
        assert_eq!(size, vec![0.8, 1.6, 3.0 * 0.8]);
        // An integer option stays an integer.
        let c2 = Config {
            parameters: Parameters {
                keys: [("run.steps".to_string(), Spec { values: vec![12.4], ..Spec::default() })]
                    .into(),
                ..Parameters::default()
            },
            search: Search::Grid,
            ..Config::default()
        };
        let out = apply(&site, &parameters(&c2), &member(&c2, 0), &base).unwrap();
        assert_eq!(out["run"]["steps"].as_integer(), Some(12));
    }

    /// A varied key that lands beside the site's others in one table (a friction law's
    /// coefficient beside another law) is named; a key the site holds, or one in a table
    /// the site does not have, is not.
    #[test]
    fn keys_added_beside_the_sites_are_named() {
        let site: toml::Table = toml::from_str(
            "[run]\ndt = 0.02\nfriction = { block_terrain = { voellmy = { mu = 0.4, xi = 200.0, depth = 10.0 } } }\n",
        )
        .unwrap();
        let c = Config {
            parameters: Parameters {
                keys: [
                    ("run.friction.block_terrain.coulomb", (0.5, 0.6)),
                    ("run.friction.block_terrain.voellmy.mu", (0.3, 0.5)),
                    ("run.dt", (0.01, 0.02)),
                    ("run.separation.beta", (0.5, 0.9)),
                ]
                .map(|(k, (lo, hi))| (k.to_string(), range(lo, hi).unwrap()))
                .into(),
                ..Parameters::default()
            },
            ..config(Search::Random)
        };
        let notes = keys_added_beside(&site, &parameters(&c));
        assert_eq!(
            notes,
            vec![
                "`run.friction.block_terrain.coulomb` is not in the site file, whose \
                 `run.friction.block_terrain` holds `voellmy`"
                    .to_string()
            ]
        );
    }
}
