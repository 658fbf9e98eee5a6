//! The checklist domain: items, their field rules and the one refusal (`item`), the state
//! the fold leaves (`state`), time input and the render. Pure: no I/O here.

pub mod item;
pub mod promise;
pub mod render;
pub mod state;
pub mod time_input;
