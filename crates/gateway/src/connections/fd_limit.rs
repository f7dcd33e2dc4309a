//! The process's open-file limit: raised as far as it may go at start, and the connection cap
//! that fits under it.

/// Descriptors kept back from connections: the listener, the store's files, standard streams,
/// the runtime's own, and refusals being written (see [`super::accept::REFUSALS_AT_ONCE`]).
pub const RESERVED_DESCRIPTORS: u64 = 128;

/// Raises the soft open-file limit to the hard one; the soft limit in force afterwards
/// (`None` where the platform has no such limit or it cannot be read).
pub fn raise_open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        match rlimit::increase_nofile_limit(rlimit::INFINITY) {
            Ok(limit) => Some(limit),
            Err(error) => {
                tracing::warn!(%error, "could not raise the open-file limit");
                open_file_limit()
            }
        }
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The soft open-file limit in force (`None` where there is none or it cannot be read).
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        rlimit::getrlimit(rlimit::Resource::NOFILE)
            .ok()
            .map(|(soft, _)| soft)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The most connections that fit under an open-file limit of `limit` with the reserve kept
/// back; half the limit when it is too small for the reserve.
pub fn connections_under(limit: u64) -> usize {
    let usable = if limit > 2 * RESERVED_DESCRIPTORS {
        limit - RESERVED_DESCRIPTORS
    } else {
        limit / 2
    };
    usize::try_from(usable.max(1)).unwrap_or(usize::MAX)
}

/// The connection cap in force: the operator's, unless it would not fit under the open-file
/// limit (then the largest that fits, with a warning), or what fits when none is set.
pub fn connection_cap(configured: Option<usize>, open_file_limit: Option<u64>) -> usize {
    /// Where the limit cannot be read, as many as a common default limit would allow.
    const UNKNOWN_LIMIT_CAP: usize = 10_000;
    let fits = open_file_limit.map(connections_under);
    match (configured, fits) {
        (Some(wanted), Some(fits)) if wanted > fits => {
            tracing::warn!(
                wanted,
                allowed = fits,
                open_file_limit = open_file_limit.unwrap_or_default(),
                "--max-connections is more than the open-file limit allows; using the most that fits"
            );
            fits
        }
        (Some(wanted), _) => wanted,
        (None, Some(fits)) => fits,
        (None, None) => UNKNOWN_LIMIT_CAP,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_leaves_the_reserve_free() {
        assert_eq!(connections_under(1024), 896);
        assert_eq!(connections_under(200), 100);
        assert_eq!(connections_under(1), 1);
        assert_eq!(connection_cap(None, Some(1024)), 896);
        assert_eq!(connection_cap(Some(5000), Some(1024)), 896);
        assert_eq!(connection_cap(Some(500), Some(1024)), 500);
        assert_eq!(connection_cap(Some(7), None), 7);
    }
}
