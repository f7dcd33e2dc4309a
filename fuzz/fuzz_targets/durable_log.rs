//! The embedded store's decoders: a log file as recovery reads it after a crash, a record's
//! changes, and a stored request's JSON as it is read back from redb. The input is taken as
//! each in turn.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use askgate::store::StoredRequest;
use askgate::store::durable_decoders::{decode_record, read_log_file};
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

fuzz_target!(|data: &[u8]| {
    let path = scratch_file();
    if std::fs::write(path, data).is_err() {
        // Its directory was cleared under it (by a finished run's clean-up).
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("a scratch directory");
        std::fs::write(path, data).expect("the scratch file is written");
    }
    let (records, stopped) = read_log_file(path).expect("the scratch file reads");
    let mut read_bytes = 0;
    for (_, payload) in &records {
        read_bytes += 16 + payload.len();
        let _ = decode_record(payload);
    }
    assert!(
        read_bytes <= data.len(),
        "more was read than the file holds"
    );
    if stopped.is_none() {
        assert!(
            data[read_bytes..].iter().take(16).all(|byte| *byte == 0),
            "reading stopped short of the end without saying why"
        );
    }
    let _ = decode_record(data);
    if let Ok(request) = serde_json::from_slice::<StoredRequest>(data) {
        let encoded = serde_json::to_vec(&request).expect("a request encodes");
        let back: StoredRequest = serde_json::from_slice(&encoded).expect("it decodes again");
        assert_eq!(
            back, request,
            "a stored request changed on its way through JSON"
        );
    }
});
