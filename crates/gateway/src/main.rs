//! The `askgate` binary: parses the command line and hands over to [`askgate::cli`].

use std::process::ExitCode;

/// mimalloc rather than glibc's malloc, so that memory comes back once requests end. Six
/// sessions filled with 64 KiB approvals took glibc to 558 MB; after every request ended and
/// was acknowledged it still held 565 MB, of which `malloc_trim(0)` (through gdb) gave back
/// all but 33 MB: free memory glibc kept because live allocations sat above it in its heaps
/// (`MALLOC_ARENA_MAX=1` with `MALLOC_TRIM_THRESHOLD_` only got it to 177 MB). mimalloc
/// returns free pages to the system shortly after they empty
/// (bench/history/*-memory-return.txt).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    askgate::cli::main()
}
