//! Working directories beside a data directory, for what reads a store without changing it
//! (`audit verify` and `export` read a repaired copy of a store that was not closed cleanly;
//! a damaged log's check reads redb's place from one): on the same filesystem as the store,
//! so a copy as large as it fits where it does and is made at the disk's speed, not in a
//! system temporary directory that may be small or in memory. Each is removed when dropped
//! (at the end of the command, or on a panic as it unwinds), and by
//! [`remove_live_scratch_dirs`] when the command is interrupted (SIGINT, SIGTERM).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The scratch directories a process has made and not removed, and whether it is being
/// stopped: one registry for the process ([`LIVE`]); tests make their own.
#[derive(Debug)]
pub(super) struct Registry(Mutex<RegistryState>);

#[derive(Debug)]
struct RegistryState {
    /// Set once an interruption has begun removing: no directory is made after it, since
    /// nothing would remove it before the process exits.
    stopping: bool,
    live: Vec<PathBuf>,
}

impl Registry {
    const fn new() -> Registry {
        Registry(Mutex::new(RegistryState {
            stopping: false,
            live: Vec::new(),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `path` (mode 0700) and lists it, both under the lock, so that an interruption
    /// removes every directory made before it and none is made after.
    fn make(&self, path: &Path) -> std::io::Result<()> {
        let mut state = self.lock();
        if state.stopping {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the command is being interrupted",
            ));
        }
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(path)?;
        state.live.push(path.to_owned());
        Ok(())
    }

    fn forget(&self, path: &Path) {
        self.lock().live.retain(|live| live != path);
    }

    /// See [`remove_live_scratch_dirs`].
    fn remove_all(&self) {
        let live = {
            let mut state = self.lock();
            state.stopping = true;
            std::mem::take(&mut state.live)
        };
        for path in live {
            for _ in 0..REMOVAL_ATTEMPTS {
                if std::fs::remove_dir_all(&path).is_ok() || !path.exists() {
                    break;
                }
            }
        }
    }
}

/// This process's scratch directories.
static LIVE: Registry = Registry::new();

/// A private (mode 0700) working directory beside a data directory, removed when dropped.
#[derive(Debug)]
pub(super) struct ScratchDir {
    path: PathBuf,
    registry: &'static Registry,
}

impl ScratchDir {
    /// Makes `.<name>.askgate-read-<pid>-<random>` beside `data_dir` (`<name>` its last part).
    ///
    /// # Errors
    /// The directory cannot be made, or the command is being interrupted.
    pub(super) fn beside(data_dir: &Path) -> std::io::Result<ScratchDir> {
        ScratchDir::beside_in(&LIVE, data_dir)
    }

    fn beside_in(registry: &'static Registry, data_dir: &Path) -> std::io::Result<ScratchDir> {
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
        registry.make(&path)?;
        Ok(ScratchDir { path, registry })
    }

    /// The directory.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        self.registry.forget(&self.path);
    }
}

/// How many times an interrupted command tries to remove one scratch directory. An attempt
/// fails only if a file was made in the directory while it ran, so this bounds the attempts
/// by the files the command goes on making (a handful: a copy, a log file), not by time.
const REMOVAL_ATTEMPTS: usize = 10_000;

/// Removes every scratch directory this process has not removed yet: for a command
/// interrupted by a signal, right before it exits. From then on no scratch directory is made
/// (the command's thread goes on until the exit, and one it made now would be left behind).
///
/// The command goes on while this runs (it is stopped by the exit that follows): a file it
/// or its store's threads create in the directory between the removal's listing and its
/// last step leaves the directory not empty, and that removal fails. So each is removed
/// again until it is gone, a bounded number of times.
pub fn remove_live_scratch_dirs() {
    LIVE.remove_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry of the test's own: the process's is not to be stopped by a test.
    fn fresh() -> &'static Registry {
        Box::leak(Box::new(Registry::new()))
    }

    #[test]
    fn a_scratch_dir_is_made_beside_the_data_and_removed_when_dropped_or_interrupted() {
        let parent = super::super::log::tests::temp_dir("scratch");
        let data = parent.join("data");
        let scratch = ScratchDir::beside_in(fresh(), &data).unwrap();
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

        let interrupting = fresh();
        let interrupted = ScratchDir::beside_in(interrupting, &data).unwrap();
        let path = interrupted.path().to_owned();
        interrupting.remove_all();
        assert!(!path.exists());
        drop(interrupted);

        // Removed though files keep being made in it while it is removed (as a command's copy
        // and its store's threads do when the command is interrupted).
        let busy_registry = fresh();
        let busy = ScratchDir::beside_in(busy_registry, &data).unwrap();
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
        busy_registry.remove_all();
        let made = writer.join().unwrap();
        assert!(!path.exists(), "left after {made} files were made in it");
        drop(busy);

        // A panic unwinding past it removes it too.
        let during_panic = std::panic::catch_unwind(|| {
            let scratch = ScratchDir::beside_in(fresh(), &data).unwrap();
            let path = scratch.path().to_owned();
            std::panic::panic_any(path);
        });
        let path = during_panic.unwrap_err().downcast::<PathBuf>().unwrap();
        assert!(!path.exists());
        std::fs::remove_dir_all(parent).unwrap();
    }

    /// Once an interruption has removed what there was, nothing more is made: the command's
    /// thread goes on until the exit, and a directory it made then would be left behind (seen
    /// as `audit verify` interrupted on a loaded machine leaving its copy).
    #[test]
    fn no_scratch_dir_is_made_once_an_interruption_has_begun() {
        let parent = super::super::log::tests::temp_dir("scratch-stopping");
        let data = parent.join("data");
        let registry = fresh();
        registry.remove_all();
        let refused = ScratchDir::beside_in(registry, &data).expect_err("refused");
        assert_eq!(refused.kind(), std::io::ErrorKind::Interrupted);
        let names: Vec<_> = std::fs::read_dir(&parent).unwrap().collect();
        assert!(names.is_empty(), "{names:?}");
        std::fs::remove_dir_all(parent).unwrap();
    }
}
