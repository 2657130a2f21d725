//! indicatif progress bars on stderr when it is a terminal; nothing otherwise.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

/// A [`talus_io::Progress`] drawn with indicatif.
/// Jobs running at once (calibration members) each get a line of their own
/// ([`talus_io::Progress::child`]), labelled, under one [`MultiProgress`].
pub struct Bars {
    bar: Mutex<Option<ProgressBar>>,
    enabled: bool,
    multi: MultiProgress,
    /// Label of a child's line (`member 3: `), empty for the main line.
    prefix: String,
}

impl Bars {
    /// Bars shown only when stderr is a terminal and not `quiet`.
    pub fn new(quiet: bool) -> Self {
        Bars {
            bar: Mutex::new(None),
            enabled: !quiet && std::io::stderr().is_terminal(),
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            prefix: String::new(),
        }
    }
}

impl talus_io::Progress for Bars {
    fn start(&self, phase: &str, len: u64) {
        if !self.enabled {
            return;
        }
        let bar = if len > 0 {
            ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template(
                    "{msg:>12} [{bar:40}] {pos}/{len}  elapsed {elapsed}, left {left}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key("left", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&time_left(s.elapsed().as_secs_f64(), s.pos(), s.len()));
                })
                .progress_chars("=> "),
            )
        } else {
            ProgressBar::new_spinner()
        };
        let bar = self.multi.add(bar);
        bar.set_message(format!("{}{phase}", self.prefix));
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
    fn child(&self, label: &str) -> Box<dyn talus_io::Progress + Send> {
        Box::new(Bars {
            bar: Mutex::new(None),
            enabled: self.enabled,
            multi: self.multi.clone(),
            prefix: format!("{label}: "),
        })
    }
}

/// The time left at the mean rate since the phase started (indicatif's `{eta}` follows
/// the recent rate, which stays at a second or two while the steps of a run slow down as
/// the heap forms). `?` until a tenth of a second and one unit have passed.
fn time_left(elapsed: f64, pos: u64, len: Option<u64>) -> String {
    let Some(len) = len else { return "?".into() };
    if pos == 0 || elapsed < 0.1 {
        return "?".into();
    }
    let secs = (elapsed / pos as f64 * len.saturating_sub(pos) as f64).round() as u64;
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::time_left;

    #[test]
    fn time_left_is_at_the_mean_rate() {
        assert_eq!(time_left(10.0, 100, Some(250)), "15s");
        assert_eq!(time_left(60.0, 10, Some(30)), "2m00s");
        assert_eq!(time_left(3600.0, 1, Some(3)), "2h00m");
        assert_eq!(time_left(0.05, 10, Some(100)), "?");
        assert_eq!(time_left(5.0, 0, Some(100)), "?");
        assert_eq!(time_left(5.0, 10, None), "?");
    }
}
