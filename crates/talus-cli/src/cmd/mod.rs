//! The subcommands. Each module: `Args` (clap) and `run(args, ctx)`.

pub mod calibrate;
pub mod compare;
pub mod diff;
pub mod ingest;
pub mod pipeline;
pub mod run;
pub mod seed;
pub mod synth;
pub mod terrain;

/// Error type of the subcommands: the stage's typed error, boxed, printed with its causes.
pub type CmdError = Box<dyn std::error::Error + Send + Sync>;

/// What every subcommand gets besides its arguments.
pub struct Ctx {
    /// Suppress progress bars and summaries.
    pub quiet: bool,
}

impl Ctx {
    /// Print a summary line on stderr unless quiet.
    pub fn say(&self, msg: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", msg.as_ref());
        }
    }
}

/// `(subcommand, text)` pairs: each stage's options rendered from its config struct.
pub fn options_help() -> Vec<(&'static str, String)> {
    vec![
        ("synth", synth::options_help()),
        ("ingest", ingest::options_help()),
        ("diff", diff::options_help()),
        ("terrain", terrain::options_help()),
        ("seed", seed::options_help()),
        ("run", run::options_help()),
        ("compare", compare::options_help()),
        ("calibrate", calibrate::options_help()),
    ]
}
