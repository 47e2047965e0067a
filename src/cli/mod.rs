//! The product's subcommands, one file each: their arguments, the conversion to the plain
//! options of [`crate::ops`], and the rendering of the result. Each runs its `ops`
//! function in the [`shell`](crate::ops::shell): one runtime, the database opened and
//! closed on every way out, the stop signals listened to once.

pub mod check_config;
pub mod explain;
pub mod health;
pub mod migrate;
pub mod optimize;
pub mod prune;
pub mod replay;
pub mod report;
pub mod run;
pub mod status;
