//! The house rules held by reading the tree: the layer order, the platform seam, text cut
//! only after the secret scan, files opened only as regular files (with the behaviour a FIFO
//! meets), and every test file gathered into a binary (`test_files`).

#[path = "../common/mod.rs"]
mod common;

mod layering;
mod non_regular_files;
mod platform_seam;
mod test_files;
mod text_cuts;
