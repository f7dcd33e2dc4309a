//! The read-only commands (`audit`, `store check`) stopped by SIGINT or SIGTERM: the scratch
//! directories they made beside the data directory (a repaired copy of the store) are removed
//! before the process exits, rather than left as large as the store. A thread of its own
//! waits for the signal, so that a command busy in a long blocking step (copying the store,
//! reading a file) is still stopped at once.

use std::process::exit;
use std::sync::Mutex;

/// Held by the signal thread from the signal until the process exits. A command whose step
/// fails because its scratch directory was removed under it (a copy's target gone) would
/// otherwise report that as its error and exit 1 before the signal thread exits 130 or 143.
static STOPPING: Mutex<()> = Mutex::new(());

/// Waits, when a signal is being handled, for its thread to end the process; returns at once
/// otherwise. Called before a command reports an error.
pub(super) fn let_an_interruption_finish() {
    drop(STOPPING.lock());
}

/// Starts the thread that waits for SIGINT or SIGTERM; returns once the signals are caught
/// (from then on, they remove the scratch directories and exit 130 or 143).
pub(super) fn remove_scratch_when_interrupted() {
    let (ready, caught) = std::sync::mpsc::sync_channel(1);
    let started = std::thread::Builder::new()
        .name("askgate-signals".into())
        .spawn(move || {
            match tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
            {
                Ok(runtime) => runtime.block_on(wait_then_exit(ready)),
                Err(_) => {
                    let _ = ready.send(false);
                }
            }
        });
    // Without the thread the default action stays: the command ends at once, and what it left
    // beside the data directory says what it is (`.<data-dir>.askgate-read-*`).
    if started.is_ok() {
        let _ = caught.recv();
    }
}

#[cfg(unix)]
async fn wait_then_exit(ready: std::sync::mpsc::SyncSender<bool>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        let _ = ready.send(false);
        return;
    };
    let _ = ready.send(true);
    let code = tokio::select! {
        _ = interrupt.recv() => 130,
        _ = terminate.recv() => 143,
    };
    let _stopping = STOPPING.lock();
    crate::store::remove_live_scratch_dirs();
    eprintln!("askgate: interrupted; its working copies beside the data directory were removed");
    exit(code);
}

#[cfg(not(unix))]
async fn wait_then_exit(ready: std::sync::mpsc::SyncSender<bool>) {
    let _ = ready.send(tokio::signal::ctrl_c().await.is_ok());
    let _stopping = STOPPING.lock();
    crate::store::remove_live_scratch_dirs();
    exit(130);
}
