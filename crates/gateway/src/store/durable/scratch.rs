//! Working directories beside a data directory, for what reads a store without changing it
//! (`audit verify` and `export` read a repaired copy of a store that was not closed cleanly;
//! a damaged log's check reads redb's place from one): on the same filesystem as the store,
//! so a copy as large as it fits where it does and is made at the disk's speed, not in a
//! system temporary directory that may be small or in memory. Each is removed when dropped
//! (at the end of the command, or on a panic as it unwinds), and by
//! [`remove_live_scratch_dirs`] when the command is interrupted (SIGINT, SIGTERM).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Every scratch directory not yet removed, for an interrupted command to remove.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A private (mode 0700) working directory beside a data directory, removed when dropped.
#[derive(Debug)]
pub(super) struct ScratchDir {
    path: PathBuf,
}

impl ScratchDir {
    /// Makes `.<name>.askgate-read-<pid>-<random>` beside `data_dir` (`<name>` its last part).
    ///
    /// # Errors
    /// The directory cannot be made.
    pub(super) fn beside(data_dir: &Path) -> std::io::Result<ScratchDir> {
        let name = data_dir
            .file_name()
            .map_or_else(|| "data".into(), |name| name.to_string_lossy());
        let parent = match data_dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let path = parent.join(format!(
            ".{name}.askgate-read-{}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        ));
        // Listed before it is made: an interruption while it is being made removes it too.
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path.clone());
        let scratch = ScratchDir { path };
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&scratch.path)?;
        Ok(scratch)
    }

    /// The directory.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|live| *live != self.path);
    }
}

/// How many times an interrupted command tries to remove one scratch directory. An attempt
/// fails only if a file was made in the directory while it ran, so this bounds the attempts
/// by the files the command goes on making (a handful: a copy, a log file), not by time.
const REMOVAL_ATTEMPTS: usize = 10_000;

/// Removes every scratch directory this process has not removed yet: for a command
/// interrupted by a signal, right before it exits.
///
/// The command goes on while this runs (it is stopped by the exit that follows): a file it
/// or its store's threads create in the directory between the removal's listing and its
/// last step leaves the directory not empty, and that removal fails. So each is removed
/// again until it is gone, a bounded number of times.
pub fn remove_live_scratch_dirs() {
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(PoisonError::into_inner));
    for path in live {
        for _ in 0..REMOVAL_ATTEMPTS {
            if std::fs::remove_dir_all(&path).is_ok() || !path.exists() {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_dir_is_made_beside_the_data_and_removed_when_dropped_or_interrupted() {
        let parent = super::super::log::tests::temp_dir("scratch");
        let data = parent.join("data");
        let scratch = ScratchDir::beside(&data).unwrap();
        assert_eq!(scratch.path().parent(), Some(parent.as_path()));
        let name = scratch.path().file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(".data.askgate-read-"), "{name}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(scratch.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        std::fs::write(scratch.path().join("copy"), b"x").unwrap();
        let path = scratch.path().to_owned();
        drop(scratch);
        assert!(!path.exists());

        let interrupted = ScratchDir::beside(&data).unwrap();
        let path = interrupted.path().to_owned();
        remove_live_scratch_dirs();
        assert!(!path.exists());
        drop(interrupted);

        // Removed though files keep being made in it while it is removed (as a command's copy
        // and its store's threads do when the command is interrupted).
        let busy = ScratchDir::beside(&data).unwrap();
        let path = busy.path().to_owned();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                // Fewer files than the removal has attempts (each failed attempt means one
                // more file), or fewer still if the directory is gone first.
                (0..REMOVAL_ATTEMPTS / 2)
                    .take_while(|n| std::fs::write(path.join(format!("f{n}")), b"x").is_ok())
                    .count()
            })
        };
        while std::fs::read_dir(&path).unwrap().count() < 50 {
            std::thread::yield_now();
        }
        remove_live_scratch_dirs();
        let made = writer.join().unwrap();
        assert!(!path.exists(), "left after {made} files were made in it");
        drop(busy);

        // A panic unwinding past it removes it too.
        let during_panic = std::panic::catch_unwind(|| {
            let scratch = ScratchDir::beside(&data).unwrap();
            let path = scratch.path().to_owned();
            std::panic::panic_any(path);
        });
        let path = during_panic.unwrap_err().downcast::<PathBuf>().unwrap();
        assert!(!path.exists());
        std::fs::remove_dir_all(parent).unwrap();
    }
}
