//! The `abcd` binary: process start, then `abcd::cli::main`.
//!
//! It starts from C's `main`, not through Rust's runtime start. That start asks glibc for
//! the main thread's stack bounds, which reads and parses `/proc/self/maps`, to place a
//! guard handler, a cost every process pays, and a hook is a process per call
//! (docs/decisions.md, "Process start"). What the runtime start did that abcd relies on is
//! done here: standard streams that are closed get `/dev/null`, `SIGPIPE` is ignored, a
//! panic exits 101, and `std::process::exit` flushes stdout. What is given up: a stack
//! overflow dies of `SIGSEGV` without the runtime's one-line message, and a panic message
//! names the thread `<unnamed>`, not `main`.
//!
//! Only on Linux with glibc, where std reads the arguments through glibc's init hook
//! before any `main`; elsewhere the binary starts through Rust's runtime as usual.

// Under `cargo test --all-targets` this file is also built as a unit-test harness, whose
// own `main` must stay; the start below is for the binary only.
#![cfg_attr(all(not(test), target_os = "linux", target_env = "gnu"), no_main)]

#[cfg(all(not(test), not(all(target_os = "linux", target_env = "gnu"))))]
fn main() {
    std::process::exit(abcd::cli::main());
}

#[cfg(all(not(test), target_os = "linux", target_env = "gnu"))]
mod start {
    use std::ffi::{c_char, c_int};

    /// What Rust's runtime start exits with when `main` panics.
    const EXIT_PANICKED: i32 = 101;

    #[unsafe(no_mangle)]
    extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
        // std reads the arguments through glibc's init hook, before `main`, so `std::env::args`
        // works unchanged.
        open_missing_standard_streams();
        // A closed pipe must be an error on write, not a silent death mid-append.
        // SAFETY: sets a signal disposition; no handler runs our code.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        let code = std::panic::catch_unwind(abcd::cli::main).unwrap_or(EXIT_PANICKED);
        std::process::exit(code)
    }

    /// Opens `/dev/null` on each of fds 0, 1 and 2 that is closed, so that no file abcd opens
    /// (a journal) can land on one and be written as stdout or stderr. Aborts when it cannot.
    fn open_missing_standard_streams() {
        let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
        loop {
            // SAFETY: `fds` is a live array of three pollfd, and a zero timeout never blocks.
            if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) } != -1 {
                break;
            }
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                // poll can be refused (a low RLIMIT_NOFILE, no memory); ask each fd instead.
                Some(libc::EINVAL | libc::EAGAIN | libc::ENOMEM) => {
                    for fd in 0..3 {
                        // SAFETY: F_GETFD only reads the fd's flags.
                        let closed = unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1
                            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF);
                        if closed {
                            open_dev_null();
                        }
                    }
                    return;
                }
                _ => std::process::abort(),
            }
        }
        for fd in fds {
            if fd.revents & libc::POLLNVAL != 0 {
                open_dev_null();
            }
        }
    }

    /// Opens `/dev/null`, which takes the lowest closed fd; aborts when it cannot.
    fn open_dev_null() {
        // SAFETY: a NUL-terminated path and plain flags.
        if unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } == -1 {
            std::process::abort();
        }
    }
}
