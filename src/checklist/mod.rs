//! The checklist domain: items, their validation, the secret scanner, time input and
//! the render. Pure: no I/O here.

pub mod item;
pub mod render;
pub mod state;
pub mod time_input;
