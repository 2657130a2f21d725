//! `talus`: one subcommand per pipeline stage. Each subcommand only parses its
//! arguments, loads the stage's typed configuration (file, `--set` overrides), calls the
//! stage's library and reports; all the work is in the `talus-*` library crates.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

mod cmd;
mod config;
mod progress;

/// Talus: rock-slope collapse from LiDAR to A-CD² simulation and back to the field evidence.
#[derive(Parser, Debug)]
#[command(name = "talus", version, about, propagate_version = true)]
struct Cli {
    /// No progress bars or summaries on stderr.
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Generate a synthetic pre/post survey pair of a cliff collapse, with its truth.
    Synth(cmd::synth::Args),
    /// Read LAS/LAZ surveys into a points Parquet table.
    Ingest(cmd::ingest::Args),
    /// Compare pre- and post-event points: DEM of difference, C2C, M3C2, volumes, zones.
    Diff(cmd::diff::Args),
    /// Triangulate a ground surface into a TIN.
    Terrain(cmd::terrain::Args),
    /// Fill the collapsed volume with rigid blocks.
    Seed(cmd::seed::Args),
    /// Run the A-CD² rigid-block simulation.
    Run(cmd::run::Args),
    /// Compare the simulated deposit with the surveyed one; write metrics, figures, report.
    Compare(cmd::compare::Args),
    /// Run every stage of a site file (pipelines/NAME.toml) into a run directory.
    Pipeline(cmd::pipeline::Args),
    /// Fit a site's run options to its survey: an ensemble of runs scored by compare.
    Calibrate(cmd::calibrate::Args),
}

fn main() -> ExitCode {
    talus_engine::allocator::keep_freed_memory();
    let mut command = Cli::command();
    // Each stage's options are documented once, on its config struct; --help shows them.
    for (name, help) in cmd::options_help() {
        command = command.mut_subcommand(name, |c| c.after_long_help(help));
    }
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let ctx = cmd::Ctx { quiet: cli.quiet };
    let result = match cli.command {
        Command::Synth(a) => cmd::synth::run(a, &ctx),
        Command::Ingest(a) => cmd::ingest::run(a, &ctx),
        Command::Diff(a) => cmd::diff::run(a, &ctx),
        Command::Terrain(a) => cmd::terrain::run(a, &ctx),
        Command::Seed(a) => cmd::seed::run(a, &ctx),
        Command::Run(a) => cmd::run::run(a, &ctx),
        Command::Compare(a) => cmd::compare::run(a, &ctx),
        Command::Pipeline(a) => cmd::pipeline::run(a, &ctx),
        Command::Calibrate(a) => cmd::calibrate::run(a, &ctx),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", talus_pipeline::runner::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}
