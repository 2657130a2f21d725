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

/// On SIGINT (Ctrl-C), SIGTERM (`kill`) or SIGHUP (the terminal closed): remove the
/// temporary files being written and the run's checkpoint segment in progress
/// ([`talus_io::atomic::remove_in_flight`]), then end by the
/// signal as its default action would (exit status 128 + the signal's number in a shell),
/// so that a stopped stage leaves neither a half-written output nor its temporary file.
/// The locks are released by the operating system; a stopped run keeps its checkpoints.
/// A signal the process was started ignoring stays ignored (`nohup talus ...`, or a
/// background job's SIGINT).
fn stop_cleanly_on_signals() {
    use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};
    let caught: Vec<i32> = [SIGINT, SIGTERM, SIGHUP].into_iter().filter(|&s| !ignored(s)).collect();
    let Ok(mut signals) = signal_hook::iterator::Signals::new(caught) else {
        // Without the handler a signal ends the process at once, as before; the next
        // writer of the directory removes what it left (talus_io::lock).
        return;
    };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            talus_io::atomic::remove_in_flight();
            let _ = signal_hook::low_level::emulate_default_handler(signal);
            // Not reached unless the default action could not be restored.
            std::process::exit(128 + signal);
        }
    });
}

/// Whether `signal`'s disposition is "ignore" (inherited from the parent).
fn ignored(signal: i32) -> bool {
    // SAFETY: a null new action only reads the current one into `old`, which is a plain
    // C struct for which all zeroes is a valid value.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

fn main() -> ExitCode {
    talus_engine::allocator::keep_freed_memory();
    stop_cleanly_on_signals();
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
    // The stages run inside a thread pool of their own (sized as rayon's global one:
    // RAYON_NUM_THREADS, else the cores). Their parallel loops are then started from a
    // worker of the pool; started from the main thread, each would be handed to the pool
    // and waited for, two thread wake-ups a loop (about 5 % of a run's time on one thread).
    let pool = match rayon::ThreadPoolBuilder::new().build() {
        Ok(pool) => pool,
        Err(e) => {
            eprintln!("error: starting the thread pool: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = pool.install(|| dispatch(cli.command, &ctx));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", talus_pipeline::runner::error_chain(e.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// Run one subcommand.
fn dispatch(command: Command, ctx: &cmd::Ctx) -> Result<(), cmd::CmdError> {
    match command {
        Command::Synth(a) => cmd::synth::run(a, ctx),
        Command::Ingest(a) => cmd::ingest::run(a, ctx),
        Command::Diff(a) => cmd::diff::run(a, ctx),
        Command::Terrain(a) => cmd::terrain::run(a, ctx),
        Command::Seed(a) => cmd::seed::run(a, ctx),
        Command::Run(a) => cmd::run::run(a, ctx),
        Command::Compare(a) => cmd::compare::run(a, ctx),
        Command::Pipeline(a) => cmd::pipeline::run(a, ctx),
        Command::Calibrate(a) => cmd::calibrate::run(a, ctx),
    }
}
