//! Fetch: the job's base source tree, pristine in the cache ([`source`],
//! its git worktrees kept few by [`git_cache`]), and the view through which
//! the tools of later steps see a tree, plain, overlaid or bind-mounted
//! ([`tree_view`]).

pub mod git_cache;
pub mod source;
pub mod tree_view;
