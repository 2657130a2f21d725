//! The stages of a site as data: their names, what each reads and writes, and where.
//!
//! Surveyed or synthetic sites: `synth` (with `[inputs] synth = true`) → `ingest_pre` →
//! `ingest_post` → `diff` → `terrain` → `seed` → `run` → `compare`; a thesis-heap site:
//! `seed` (import of the thesis's files) → `run` → `compare`.

use crate::site::{Inputs, Site, thesis_files};
use std::path::{Path, PathBuf};
use talus_schema::file_names::{self as names, in_dir};

/// A stage of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StageName {
    Synth,
    IngestPre,
    IngestPost,
    Diff,
    Terrain,
    Seed,
    Run,
    Compare,
}

impl StageName {
    /// Every stage, in pipeline order.
    pub const ALL: [StageName; 8] = [
        StageName::Synth,
        StageName::IngestPre,
        StageName::IngestPost,
        StageName::Diff,
        StageName::Terrain,
        StageName::Seed,
        StageName::Run,
        StageName::Compare,
    ];

    /// The name in the manifest and on the command line (`ingest_pre`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            StageName::Synth => "synth",
            StageName::IngestPre => "ingest_pre",
            StageName::IngestPost => "ingest_post",
            StageName::Diff => "diff",
            StageName::Terrain => "terrain",
            StageName::Seed => "seed",
            StageName::Run => "run",
            StageName::Compare => "compare",
        }
    }

    /// The site-file table holding its options.
    pub fn table(self) -> &'static str {
        match self {
            StageName::IngestPre | StageName::IngestPost => "ingest",
            other => other.as_str(),
        }
    }
}

impl std::fmt::Display for StageName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown stage name; lists the known ones.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "unknown stage `{0}` (one of synth, ingest_pre, ingest_post, diff, terrain, seed, run, compare)"
)]
pub struct UnknownStage(pub String);

impl std::str::FromStr for StageName {
    type Err = UnknownStage;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StageName::ALL
            .into_iter()
            .find(|n| n.as_str() == s)
            .ok_or_else(|| UnknownStage(s.to_string()))
    }
}

/// What a stage does, with its typed inputs and outputs (its options come from the
/// site's typed configuration, by [`StageName::table`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Job {
    /// `talus synth`.
    Synth { out_dir: PathBuf },
    /// `talus ingest`.
    Ingest { inputs: Vec<PathBuf>, out: PathBuf },
    /// `talus diff`.
    Diff { pre: PathBuf, post: PathBuf, out_dir: PathBuf },
    /// `talus terrain` (post-event points, with the pre-event bed under the deposit).
    Terrain { points: PathBuf, pre: PathBuf, zones: PathBuf, out_dir: PathBuf },
    /// `talus seed` from the DoD and the scar zones, above the post-event TIN.
    Seed { dod: PathBuf, zones: PathBuf, terrain: PathBuf, out: PathBuf },
    /// `talus seed --thesis-dir`: the thesis's granular layer.
    ThesisImport { dir: PathBuf, n: u32, out: PathBuf },
    /// `talus run`.
    Run { blocks: PathBuf, terrain: Option<PathBuf>, out_dir: PathBuf },
    /// `talus compare`.
    Compare { inputs: talus_compare::Inputs, out_dir: PathBuf },
}

fn p(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

impl Job {
    /// The equivalent `talus` command line (without `--config`), recorded in the
    /// manifest so that a stage can be re-run by hand.
    pub fn command(&self) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        fn push(a: &mut Vec<String>, flag: &str, path: &Path) {
            a.push(flag.to_string());
            a.push(p(path));
        }
        let stage = match self {
            Job::Synth { out_dir } => {
                push(&mut a, "--out-dir", out_dir);
                "synth"
            }
            Job::Ingest { inputs, out } => {
                for i in inputs {
                    a.push(p(i));
                }
                push(&mut a, "--out", out);
                "ingest"
            }
            Job::Diff { pre, post, out_dir } => {
                push(&mut a, "--pre", pre);
                push(&mut a, "--post", post);
                push(&mut a, "--out-dir", out_dir);
                "diff"
            }
            Job::Terrain { points, pre, zones, out_dir } => {
                push(&mut a, "--points", points);
                push(&mut a, "--pre", pre);
                push(&mut a, "--zones", zones);
                push(&mut a, "--out-dir", out_dir);
                "terrain"
            }
            Job::Seed { dod, zones, terrain, out } => {
                push(&mut a, "--dod", dod);
                push(&mut a, "--zones", zones);
                push(&mut a, "--terrain", terrain);
                push(&mut a, "--out", out);
                "seed"
            }
            Job::ThesisImport { dir, n, out } => {
                push(&mut a, "--thesis-dir", dir);
                a.push("--thesis-n".into());
                a.push(n.to_string());
                push(&mut a, "--out", out);
                "seed"
            }
            Job::Run { blocks, terrain, out_dir } => {
                push(&mut a, "--blocks", blocks);
                if let Some(t) = terrain {
                    push(&mut a, "--terrain", t);
                }
                push(&mut a, "--out-dir", out_dir);
                "run"
            }
            Job::Compare { inputs, out_dir } => {
                push(&mut a, "--run", &inputs.run_dir);
                if let Some(d) = &inputs.diff_dir {
                    push(&mut a, "--diff", d);
                }
                if let Some(t) = &inputs.terrain_dir {
                    push(&mut a, "--terrain", t);
                }
                if let Some(b) = &inputs.blocks {
                    push(&mut a, "--blocks", b);
                }
                push(&mut a, "--out-dir", out_dir);
                "compare"
            }
        };
        let mut c = vec!["talus".to_string(), stage.to_string()];
        c.extend(a);
        c
    }
}

/// One stage to run: what it does, the files it reads and those it must write.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: StageName,
    pub job: Job,
    /// Files it reads (hashed for skipping).
    pub inputs: Vec<PathBuf>,
    /// Files it must write. The manifest also records the files the stage reports having
    /// written besides these (compare's figures), and nothing else of its directory.
    pub outputs: Vec<PathBuf>,
}

/// Where each stage writes. By default `OUT/<stage>` (`OUT/points` for both ingests);
/// `talus calibrate` points the shared stages at one directory and the varied ones at a
/// member's.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub synth: PathBuf,
    pub points: PathBuf,
    pub diff: PathBuf,
    pub terrain: PathBuf,
    pub seed: PathBuf,
    pub run: PathBuf,
    pub compare: PathBuf,
}

impl Layout {
    /// Every stage under `out`.
    pub fn under(out: &Path) -> Self {
        Layout {
            synth: out.join("synth"),
            points: out.join("points"),
            diff: out.join("diff"),
            terrain: out.join("terrain"),
            seed: out.join("seed"),
            run: out.join("run"),
            compare: out.join("compare"),
        }
    }

    /// The seeded blocks.
    pub fn blocks(&self) -> PathBuf {
        self.seed.join(names::seed::BLOCKS)
    }

    /// The report of the comparison.
    pub fn report(&self) -> PathBuf {
        self.compare.join(names::compare::REPORT)
    }
}

/// The stages of `site` writing into `layout`, in order.
pub fn plan(site: &Site, layout: &Layout) -> Vec<Stage> {
    let blocks = layout.blocks();
    let run_outputs = in_dir(&layout.run, names::run::ALL).to_vec();
    let compare_outputs: Vec<PathBuf> = in_dir(
        &layout.compare,
        [names::compare::METRICS_PARQUET, names::compare::METRICS_JSON, names::compare::REPORT],
    )
    .to_vec();
    let mut stages = Vec::new();
    let (pre, post) = match &site.inputs {
        Inputs::Thesis { dir, n } => {
            stages.push(Stage {
                name: StageName::Seed,
                job: Job::ThesisImport { dir: dir.clone(), n: *n, out: blocks.clone() },
                inputs: thesis_files(dir, *n).to_vec(),
                outputs: vec![blocks.clone()],
            });
            stages.push(Stage {
                name: StageName::Run,
                job: Job::Run {
                    blocks: blocks.clone(),
                    terrain: None,
                    out_dir: layout.run.clone(),
                },
                inputs: vec![blocks.clone()],
                outputs: run_outputs.clone(),
            });
            let compare_inputs = talus_compare::Inputs {
                run_dir: layout.run.clone(),
                diff_dir: None,
                terrain_dir: None,
                blocks: Some(blocks),
            };
            stages.push(Stage {
                name: StageName::Compare,
                inputs: compare_inputs.files(),
                job: Job::Compare { inputs: compare_inputs, out_dir: layout.compare.clone() },
                outputs: compare_outputs,
            });
            return stages;
        }
        Inputs::Synth => {
            let d = &layout.synth;
            stages.push(Stage {
                name: StageName::Synth,
                job: Job::Synth { out_dir: d.clone() },
                inputs: vec![],
                outputs: in_dir(d, names::synth::ALL).to_vec(),
            });
            (vec![d.join(names::synth::PRE)], vec![d.join(names::synth::POST)])
        }
        Inputs::Surveys { pre, post } => (pre.clone(), post.clone()),
    };
    let pre_pq = layout.points.join(names::points::PRE);
    let post_pq = layout.points.join(names::points::POST);
    for (name, ins, out) in
        [(StageName::IngestPre, pre, &pre_pq), (StageName::IngestPost, post, &post_pq)]
    {
        stages.push(Stage {
            name,
            job: Job::Ingest { inputs: ins.clone(), out: out.clone() },
            inputs: ins,
            outputs: vec![out.clone()],
        });
    }
    let dod = layout.diff.join(names::diff::DOD);
    let zones = layout.diff.join(names::diff::ZONES);
    stages.push(Stage {
        name: StageName::Diff,
        job: Job::Diff { pre: pre_pq.clone(), post: post_pq.clone(), out_dir: layout.diff.clone() },
        inputs: vec![pre_pq.clone(), post_pq.clone()],
        outputs: in_dir(&layout.diff, names::diff::ALL).to_vec(),
    });
    stages.push(Stage {
        name: StageName::Terrain,
        job: Job::Terrain {
            points: post_pq.clone(),
            pre: pre_pq.clone(),
            zones: zones.clone(),
            out_dir: layout.terrain.clone(),
        },
        inputs: vec![post_pq, pre_pq, zones.clone()],
        outputs: in_dir(&layout.terrain, names::terrain::ALL).to_vec(),
    });
    let tin = in_dir(&layout.terrain, names::terrain::TIN).to_vec();
    let mut seed_inputs = vec![dod.clone(), zones.clone()];
    seed_inputs.extend(tin.iter().cloned());
    stages.push(Stage {
        name: StageName::Seed,
        job: Job::Seed {
            dod: dod.clone(),
            zones: zones.clone(),
            terrain: layout.terrain.clone(),
            out: blocks.clone(),
        },
        inputs: seed_inputs,
        outputs: vec![blocks.clone()],
    });
    let mut run_inputs = vec![blocks.clone()];
    run_inputs.extend(tin.iter().cloned());
    stages.push(Stage {
        name: StageName::Run,
        job: Job::Run {
            blocks: blocks.clone(),
            terrain: Some(layout.terrain.clone()),
            out_dir: layout.run.clone(),
        },
        inputs: run_inputs,
        outputs: run_outputs.clone(),
    });
    let mut outputs = compare_outputs;
    outputs.push(layout.compare.join(names::compare::THICKNESS));
    let compare_inputs = talus_compare::Inputs {
        run_dir: layout.run.clone(),
        diff_dir: Some(layout.diff.clone()),
        terrain_dir: Some(layout.terrain.clone()),
        blocks: Some(blocks),
    };
    stages.push(Stage {
        name: StageName::Compare,
        inputs: compare_inputs.files(),
        job: Job::Compare { inputs: compare_inputs, out_dir: layout.compare.clone() },
        outputs,
    });
    stages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_names_round_trip_and_unknown_names_are_refused() {
        for n in StageName::ALL {
            assert_eq!(n.as_str().parse::<StageName>().unwrap(), n);
        }
        let e = "simulate".parse::<StageName>().unwrap_err().to_string();
        assert!(e.contains("simulate") && e.contains("ingest_pre"), "{e}");
        assert_eq!(StageName::IngestPost.table(), "ingest");
    }
}
