//! The store's decoders, reached by the fuzz targets (`fuzz/`) through the `fuzzing` feature
//! and never by a build that ships: what reads a log file, and what decodes the changes one of
//! its records holds.

use std::io;
use std::path::Path;

use super::log;
use super::logged::Logged;

/// A log record read back: its sequence number and its payload.
pub type LogRecord = (u64, Vec<u8>);

/// The records of the log file at `path` up to the first that cannot be read, and where and
/// why that one cannot, as recovery reads them.
///
/// # Errors
/// The file cannot be read.
pub fn read_log_file(path: &Path) -> io::Result<(Vec<LogRecord>, Option<String>)> {
    let read = log::read(path, None)?;
    let stopped = read
        .damage
        .map(|damage| format!("at byte {}: {}", damage.at, damage.why));
    let records = read
        .records
        .into_iter()
        .map(|record| (record.seq, record.payload))
        .collect();
    Ok((records, stopped))
}

/// Decodes a record's payload as recovery does (the changes of one group commit); on success,
/// encodes them again and checks that they read back the same.
///
/// # Errors
/// The payload is not a record's changes.
///
/// # Panics
/// The changes do not survive their own encoding.
pub fn decode_record(payload: &[u8]) -> Result<usize, serde_json::Error> {
    let changes: Vec<Logged> = serde_json::from_slice(payload)?;
    let encoded = serde_json::to_vec(&changes).expect("changes encode");
    let back: Vec<Logged> = serde_json::from_slice(&encoded).expect("encoded changes decode");
    assert_eq!(back, changes, "changes changed on their way through JSON");
    Ok(changes.len())
}
