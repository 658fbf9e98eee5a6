//! Fuzz target `checklist_reader`: see `fuzz/README.md`; the invariants live in `fuzz/checks.rs`.
#![no_main]

#[allow(dead_code)]
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::checklist_reader(data));
