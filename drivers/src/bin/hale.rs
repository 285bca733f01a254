//! `hale`: Hale API surfaces from the command line.
#![forbid(unsafe_code)]

/// The server hands every call between threads: the loop allocates a call's
/// payload and context, a worker frees them, and the worker's completion
/// goes the other way. glibc's allocator takes an arena lock for each such
/// free; mimalloc frees to the owning thread's heap without one.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(limen_drivers::hale_cli::main(
        std::env::args().skip(1).collect(),
    ));
}
