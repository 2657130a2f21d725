//! The files of a survey as a user names them: LAS/LAZ files, directories of tiles, or
//! glob patterns (`tiles/*.laz`, `2010/**/*.la[sz]`), expanded in a fixed order.
//!
//! A directory gives the `.las` and `.laz` files directly inside it (any letter case), a
//! pattern the files it matches (the `glob` crate's syntax: `*`, `?`, `[...]`, `**`),
//! each list sorted by path so the order, hence the output, does not depend on the file
//! system. A path named twice is kept once, at its first place. A directory or pattern
//! that gives no file is an error naming it, as is a path that does not exist.

use std::path::{Path, PathBuf};

/// Why a survey's files cannot be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurveyFilesError {
    #[error("{0}: cannot read: no such file or directory")]
    NotFound(PathBuf),
    #[error("{0}: the directory holds no .las or .laz file")]
    EmptyDirectory(PathBuf),
    #[error("{pattern}: the pattern matches no file")]
    NoMatch { pattern: String },
    #[error("{pattern}: not a valid glob pattern: {reason}")]
    BadPattern { pattern: String, reason: String },
    #[error("{path}: cannot be listed: {reason}")]
    Unreadable { path: PathBuf, reason: String },
}

/// Whether a path names a glob pattern rather than a file.
pub fn is_pattern(p: &Path) -> bool {
    p.to_string_lossy().contains(['*', '?', '['])
}

fn is_las(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("las") || e.eq_ignore_ascii_case("laz"))
}

/// The files of a survey, in order: each entry a file, a directory or a pattern.
pub fn expand(entries: &[PathBuf]) -> Result<Vec<PathBuf>, SurveyFilesError> {
    let mut out: Vec<PathBuf> = Vec::new();
    let push = |p: PathBuf, out: &mut Vec<PathBuf>| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for e in entries {
        if e.is_dir() {
            let unreadable = |err: std::io::Error| SurveyFilesError::Unreadable {
                path: e.clone(),
                reason: err.to_string(),
            };
            let mut files = Vec::new();
            for entry in std::fs::read_dir(e).map_err(unreadable)? {
                let p = entry.map_err(unreadable)?.path();
                if p.is_file() && is_las(&p) {
                    files.push(p);
                }
            }
            if files.is_empty() {
                return Err(SurveyFilesError::EmptyDirectory(e.clone()));
            }
            files.sort();
            files.into_iter().for_each(|p| push(p, &mut out));
        } else if e.is_file() {
            push(e.clone(), &mut out);
        } else if is_pattern(e) {
            let pattern = e.to_string_lossy().into_owned();
            let paths = glob::glob(&pattern).map_err(|err| SurveyFilesError::BadPattern {
                pattern: pattern.clone(),
                reason: err.to_string(),
            })?;
            let mut files: Vec<PathBuf> =
                paths.filter_map(Result::ok).filter(|p| p.is_file()).collect();
            if files.is_empty() {
                return Err(SurveyFilesError::NoMatch { pattern });
            }
            files.sort();
            files.into_iter().for_each(|p| push(p, &mut out));
        } else {
            return Err(SurveyFilesError::NotFound(e.clone()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_patterns_and_files_expand_in_order() {
        let d = tempfile::tempdir().unwrap();
        let tiles = d.path().join("tiles");
        std::fs::create_dir(&tiles).unwrap();
        for n in ["t_2.laz", "t_1.LAS", "t_3.laz", "notes.txt"] {
            std::fs::write(tiles.join(n), b"x").unwrap();
        }
        let single = d.path().join("a.laz");
        std::fs::write(&single, b"x").unwrap();
        let got = expand(&[single.clone(), tiles.clone()]).unwrap();
        let names: Vec<String> =
            got.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["a.laz", "t_1.LAS", "t_2.laz", "t_3.laz"]);
        let pat = tiles.join("t_[23].laz");
        let got = expand(&[pat, tiles.join("t_2.laz")]).unwrap();
        assert_eq!(got, [tiles.join("t_2.laz"), tiles.join("t_3.laz")]);
    }

    #[test]
    fn nothing_found_is_an_error_naming_the_entry() {
        let d = tempfile::tempdir().unwrap();
        let e = expand(&[d.path().to_path_buf()]).unwrap_err();
        assert!(matches!(e, SurveyFilesError::EmptyDirectory(_)), "{e}");
        let e = expand(&[d.path().join("*.laz")]).unwrap_err();
        assert!(e.to_string().contains("matches no file"), "{e}");
        let e = expand(&[d.path().join("missing.laz")]).unwrap_err();
        assert!(e.to_string().contains("missing.laz: cannot read: no such file"), "{e}");
    }
}
