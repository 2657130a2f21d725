//! indicatif progress bars on stderr when it is a terminal; nothing otherwise.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

/// A [`talus_io::Progress`] drawn with indicatif.
pub struct Bars {
    bar: Mutex<Option<ProgressBar>>,
    enabled: bool,
}

impl Bars {
    /// Bars shown only when stderr is a terminal and not `quiet`.
    pub fn new(quiet: bool) -> Self {
        Bars { bar: Mutex::new(None), enabled: !quiet && std::io::stderr().is_terminal() }
    }
}

impl talus_io::Progress for Bars {
    fn start(&self, phase: &str, len: u64) {
        if !self.enabled {
            return;
        }
        let bar = if len > 0 {
            ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ({eta})")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            )
        } else {
            ProgressBar::new_spinner()
        };
        bar.set_message(phase.to_string());
        if let Ok(mut b) = self.bar.lock()
            && let Some(old) = b.replace(bar)
        {
            old.finish_and_clear();
        }
    }
    fn inc(&self, n: u64) {
        if let Ok(b) = self.bar.lock()
            && let Some(b) = b.as_ref()
        {
            b.inc(n);
        }
    }
    fn finish(&self) {
        if let Ok(mut b) = self.bar.lock()
            && let Some(b) = b.take()
        {
            b.finish_and_clear();
        }
    }
}
