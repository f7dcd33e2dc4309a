//! Handing changes to the store: in the order they are made, timed, a store's panic turned
//! into a failed commit, and the change finished in the hub even if its caller goes away.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use futures_util::FutureExt as _;

use super::Hub;
use crate::metrics::Metrics;
use crate::store::{Durability, StoreError, StoreFuture, StoreOp, Verdict};

impl Hub {
    /// Hands `ops` to the store now; waits for them to be durable, then runs `finish` with
    /// the result, and returns what it returns. The caller may be dropped meanwhile (axum
    /// drops a handler whose HTTP client hangs up): the change is still finished, never left
    /// half-way between the store and the hub. `Err` only if `finish` panicked or the runtime
    /// is shutting down.
    pub(super) async fn commit_then<T: Send + 'static>(
        self: &Arc<Self>,
        ops: Vec<StoreOp>,
        finish: impl FnOnce(&Arc<Hub>, Result<Vec<Verdict>, StoreError>) -> T + Send + 'static,
    ) -> Result<T, Unfinished> {
        let mut committing = self.store_commit(ops);
        // A store that decides at once (the memory store) is finished here, in the caller's
        // task: nothing lies between the commit and `finish` for a dropped caller to cut
        // short, and a task spawned only to be waited for was most of what such a commit cost.
        if let Some(committed) = (&mut committing).now_or_never() {
            return std::panic::catch_unwind(AssertUnwindSafe(|| finish(self, committed)))
                .map_err(|panic| Unfinished::Panicked(panic_text(panic.as_ref()).to_owned()));
        }
        // Otherwise in a task of its own, which runs to its end whatever becomes of the caller.
        let hub = Arc::clone(self);
        self.run_to_end(async move { finish(&hub, committing.await) })
            .await
    }

    /// Runs `work` to its end whatever becomes of the caller: polled here first, and if it
    /// has to wait, in a task of its own. `Err` if it panicked or the runtime is shutting down.
    pub(super) async fn run_to_end<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, Unfinished> {
        let mut work = Box::pin(AssertUnwindSafe(work).catch_unwind());
        let finished = match (&mut work).now_or_never() {
            Some(finished) => finished,
            None => tokio::spawn(work)
                .await
                .map_err(|error| match error.try_into_panic() {
                    Ok(panic) => Unfinished::Panicked(panic_text(panic.as_ref()).to_owned()),
                    Err(_) => Unfinished::ShuttingDown,
                })?,
        };
        finished.map_err(|panic| Unfinished::Panicked(panic_text(panic.as_ref()).to_owned()))
    }

    /// Hands `ops` to the store now (so commits keep the order of these calls); the future
    /// waits for them to be durable, says what the store decided of each, and the time that
    /// took is counted in the metrics.
    pub(super) fn store_commit(&self, ops: Vec<StoreOp>) -> Committing {
        let started = Instant::now();
        // A store that panics (a bug), whether as it takes the commit or while it carries it
        // out, has failed this commit like any other failure: the callers' error paths put the
        // request back as it was. Left to unwind, the panic would skip them and leave the
        // request half-changed, with everyone behind it waiting for good.
        let deciding = std::panic::catch_unwind(AssertUnwindSafe(|| self.store.decide(ops)))
            .unwrap_or_else(|panic| {
                failed_with(StoreError::internal(panic_message(panic.as_ref())))
            });
        Committing {
            deciding,
            timed: Some((started, Arc::clone(&self.metrics))),
        }
    }

    /// Hands `ops` to the store now, as [`Hub::store_commit`] does, in two steps: the first
    /// future is ready with what the store decided once the change may be shown, the second
    /// once it is durable (and may be promised). The time counted is the second's, or with
    /// [`Durability::Lazy`], which nobody waits on, the first's.
    pub(super) fn store_commit_in_steps(
        &self,
        ops: Vec<StoreOp>,
        durability: Durability,
    ) -> (Committing, Committing<()>) {
        let started = Instant::now();
        let steps = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.store.decide_in_steps(ops, durability)
        }));
        let (taken, durable) = match steps {
            Ok(steps) => (steps.taken, steps.durable),
            Err(panic) => {
                let error = StoreError::internal(panic_message(panic.as_ref()));
                (failed_with(error.clone()), failed_with(error))
            }
        };
        // Counted once, at the step its caller waits for.
        let timed = Some((started, Arc::clone(&self.metrics)));
        let (taken_timed, durable_timed) = match durability {
            Durability::Prompt => (None, timed),
            Durability::Lazy => (timed, None),
        };
        let taken = Committing {
            deciding: taken,
            timed: taken_timed,
        };
        let durable = Committing {
            deciding: durable,
            timed: durable_timed,
        };
        (taken, durable)
    }
}

/// A commit the store has taken: ready with what it decided of each op (or, for a commit's
/// durable step, when that is done).
pub(super) struct Committing<T = Vec<Verdict>> {
    deciding: StoreFuture<'static, T>,
    /// When it was handed over, to count how long it took: for the step that is waited on.
    timed: Option<(Instant, Arc<Metrics>)>,
}

impl<T> Future for Committing<T> {
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| this.deciding.as_mut().poll(cx)));
        let committed = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(committed)) => committed,
            Err(panic) => Err(StoreError::internal(panic_message(panic.as_ref()))),
        };
        if let Some((started, metrics)) = &this.timed {
            metrics.store_committed(started.elapsed());
        }
        Poll::Ready(committed)
    }
}

/// A commit the store could not even take (it panicked): failed with `error`.
fn failed_with<T: Send + 'static>(error: StoreError) -> StoreFuture<'static, T> {
    Box::pin(std::future::ready(Err(error)))
}

/// Why a committed change was not finished in the hub.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unfinished {
    /// Finishing it panicked (a bug).
    #[error("finishing the change panicked ({0})")]
    Panicked(String),
    /// The runtime is shutting down.
    #[error("the gateway is shutting down")]
    ShuttingDown,
}

/// What a panic said.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// What a panic said, as the error of the commit it broke.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let said = panic_text(panic);
    format!("the store panicked ({said}); the change may not have been kept")
}
