//! The embedded store's decoders: a log file as recovery reads it after a crash, a record's
//! changes, and a stored request's JSON as it is read back from redb. The input is taken as
//! each in turn.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// One file per fuzzing process, written over for every input; in memory where the system
/// has a memory file system (a file on disk costs more than the reading it feeds).
fn scratch_file() -> &'static PathBuf {
    static FILE: OnceLock<PathBuf> = OnceLock::new();
    FILE.get_or_init(|| {
        let shm = PathBuf::from("/dev/shm");
        let base = if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("askgate-fuzz-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        dir.join("log-00000001.wal")
    })
}

fuzz_target!(|data: &[u8]| askgate_fuzz::targets::durable_log(scratch_file(), data));
