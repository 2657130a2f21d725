//! Progress reporting from a stage's library to whatever front end runs it.

/// Progress reporting from a stage's library to whatever front end runs it (the CLI
/// shows indicatif bars on a terminal; tests and pipelines pass [`NoProgress`]).
pub trait Progress: Sync {
    /// Start a phase of `len` units (0 when unknown).
    fn start(&self, _phase: &str, _len: u64) {}
    /// `n` more units of the current phase are done.
    fn inc(&self, _n: u64) {}
    /// The current phase is done.
    fn finish(&self) {}
    /// Progress of one of several jobs running at once (a calibration member), shown on
    /// its own line labelled `label`; by default it reports nothing.
    fn child(&self, _label: &str) -> Box<dyn Progress + Send> {
        Box::new(NoProgress)
    }
}

/// Progress that reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {}
