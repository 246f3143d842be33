//! Ctrl-C (and SIGTERM, as `kill`, `timeout` and Kubernetes stop a process): one stop flag for
//! the process (a handler can be installed only once), which runs drain and report on, and
//! servers stop on; a second signal exits at once.

static INTERRUPT: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

/// Whether Ctrl-C stopped this process's work (the binary then exits with status 130, after
/// printing what was measured until then).
pub fn was_set() -> bool {
    INTERRUPT.get().is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
}

/// The process-wide stop flag, set by Ctrl-C: runs drain and report, servers stop. A second
/// Ctrl-C exits at once. (One flag for the process, since a handler can be installed only once.)
pub fn flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    INTERRUPT
        .get_or_init(|| {
            let flag = Arc::new(AtomicBool::new(false));
            let set = flag.clone();
            let _ = ctrlc::set_handler(move || {
                if set.swap(true, Ordering::Relaxed) {
                    std::process::exit(130);
                }
            });
            flag
        })
        .clone()
}
