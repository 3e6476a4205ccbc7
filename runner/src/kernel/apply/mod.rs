//! Apply: the patch series put on the patched side's tree, patch by patch,
//! and a series that does not apply reported with its failing hunk
//! ([`patch`]).

pub mod patch;
