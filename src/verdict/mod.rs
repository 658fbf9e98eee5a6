//! The stop verdict and its pure parts.

pub mod cron;
pub mod stop;
