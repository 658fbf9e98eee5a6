//! The stop verdict: what a session that ends its turn must do next (pure).

pub mod stop;
