//! PNG figures with plotters and the bundled DejaVu Sans font, written atomically.

use image::codecs::png::PngEncoder;
use image::{ColorType, ImageEncoder};
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Once;
use talus_io::AtomicFile;

/// The font family every figure uses (the bundled DejaVu Sans, registered on first use).
pub const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../../data/fonts/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

fn register_font() {
    REGISTER.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold, FontStyle::Italic, FontStyle::Oblique] {
            // The bundled font is valid; a failure would only lose the text.
            let _ = plotters::style::register_font(FONT, style, FONT_BYTES);
        }
    });
}

/// A figure could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: drawing failed: {message}")]
pub struct PlotError {
    pub path: PathBuf,
    pub message: String,
}

/// A drawing area of a PNG figure.
pub type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
/// A chart with two linear axes.
pub type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// `expr?` for plotters' errors inside a [`draw_png`] closure (errors become text).
#[macro_export]
macro_rules! tryp {
    ($e:expr) => {
        $e.map_err(|e| e.to_string())?
    };
}

/// Draw into `path` atomically: the figure is drawn in memory, encoded as PNG and written
/// by [`AtomicFile`] (a temporary file beside it, renamed into place). Creates the parent
/// directory.
pub fn draw_png(
    path: &Path,
    size: (u32, u32),
    f: impl FnOnce(&Area) -> Result<(), String>,
) -> Result<(), PlotError> {
    register_font();
    let err = |message: String| PlotError { path: path.to_path_buf(), message };
    let mut pixels = vec![0u8; 3 * size.0 as usize * size.1 as usize];
    (|| {
        let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        tryp!(root.fill(&WHITE));
        f(&root)?;
        tryp!(root.present());
        Ok::<(), String>(())
    })()
    .map_err(err)?;
    // The encoder and settings plotters uses when it saves a PNG itself.
    let mut png = Vec::new();
    PngEncoder::new(&mut png)
        .write_image(&pixels, size.0, size.1, ColorType::Rgb8)
        .map_err(|e| err(e.to_string()))?;
    AtomicFile::write_all(path, &png).map_err(|e| err(e.to_string()))
}

/// A number with 2-3 significant digits for axis labels.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_is_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("figures").join("f.png");
        draw_png(&path, (120, 80), |root| {
            tryp!(root.draw(&Circle::new((60, 40), 20, RED.filled())));
            tryp!(root.draw(&Text::new("x", (5, 5), (FONT, 12))));
            Ok(())
        })
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let path = dir.path().join("figures").join("g.png");
        let e = draw_png(&path, (120, 80), |_| Err("no data".into())).unwrap_err();
        assert!(e.to_string().contains("g.png") && e.to_string().contains("no data"), "{e}");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("figures")).unwrap().collect();
        assert_eq!(left.len(), 1, "only f.png remains");
    }

    #[test]
    fn axis_labels_are_short() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(1234.5), "1234");
        assert_eq!(short(12.34), "12.3");
        assert_eq!(short(0.5), "0.50");
        assert_eq!(short(0.01234), "1.2e-2");
    }
}
