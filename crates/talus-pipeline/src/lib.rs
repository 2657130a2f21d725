//! The pipeline of a site as a library: `talus pipeline SITE.toml --out DIR` and
//! `talus calibrate` drive it, the CLI only parses arguments and prints.
//!
//! * [`site`]: the site file, read once into the typed options of every stage
//!   ([`SiteFile`]) and checked (unknown keys, each stage's `validate()`, input files)
//!   before any stage runs.
//! * [`stage`]: the stages as data ([`StageName`], [`Job`] with typed inputs and
//!   outputs), planned into a [`Layout`] of output directories with the file names of
//!   `talus_schema::file_names`.
//! * [`manifest`]: `OUT/manifest.json` and the hash-based skipping of unchanged stages.
//! * [`runner`]: the stages run in this process, on the site's typed options, in order;
//!   a failing stage stops the pipeline and is recorded; earlier outputs stay.

use std::path::Path;

pub mod error;
pub mod manifest;
pub mod options;
pub mod runner;
pub mod site;
pub mod stage;

pub use error::Error;
pub use manifest::{Manifest, StageRecord, StageStatus};
pub use options::OptionsError;
pub use runner::{Outcome, RunOptions, run_stages};
pub use site::{Inputs, Site, SiteFile};
pub use stage::{Job, Layout, Stage, StageName, plan};

/// Where a pipeline reports: the running stage's progress, and its log lines.
pub struct Context<'a> {
    /// Progress of the stage running.
    pub progress: &'a dyn talus_io::Progress,
    /// One line of the pipeline's log (the CLI prints it on stderr unless quiet).
    pub log: &'a (dyn Fn(&str) + Sync),
}

/// A context that reports nothing.
pub fn silent() -> Context<'static> {
    static NONE: talus_io::NoProgress = talus_io::NoProgress;
    Context { progress: &NONE, log: &|_| {} }
}

/// Every stage of `site` into `out` (`OUT/<stage>/`, `OUT/manifest.json`); returns the
/// manifest, whose `report` is the comparison's report.
pub fn run(
    site: &Site,
    out: &Path,
    options: &RunOptions,
    ctx: &Context,
) -> Result<Manifest, Error> {
    let layout = Layout::under(out);
    let stages = plan(site, &layout);
    if let Some(from) = options.from
        && !stages.iter().any(|s| s.name == from)
    {
        let names: Vec<&str> = stages.iter().map(|s| s.name.as_str()).collect();
        return Err(Error::NoSuchStage { stage: from, stages: names.join(", ") });
    }
    talus_io::create_dir(out)
        .map_err(|e| Error::Output { path: out.to_path_buf(), message: e.to_string() })?;
    let manifest_path = out.join(talus_schema::file_names::MANIFEST);
    (ctx.log)(&format!(
        "pipeline `{}`: {} stages into {}",
        site.name(),
        stages.len(),
        out.display()
    ));
    match run_stages(&stages, site, Manifest::new(site), &manifest_path, options, ctx)? {
        Outcome::Done(mut manifest) => {
            manifest.report = Some(layout.report().to_string_lossy().into_owned());
            manifest.write(&manifest_path)?;
            Ok(manifest)
        }
        Outcome::Failed { stage, error } => {
            Err(Error::StageFailed { site: site.name().to_string(), stage, error })
        }
    }
}
