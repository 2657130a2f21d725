//! The pieces of a Talus report that `talus compare` and `talus calibrate` share: PNG
//! figures drawn atomically with the bundled DejaVu Sans font ([`plot`]), and the HTML
//! around them — escaping, number formatting, the page head and figures embedded as
//! base64 data URIs ([`html`]). Each report's content (which figures, which tables) stays
//! in its own crate.

pub mod html;
pub mod plot;

pub use plot::PlotError;
