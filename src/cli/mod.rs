//! The product's subcommands, one file each: their arguments, the conversion to the plain
//! options of the library (`ops`, `daemon`, `db`), and the rendering of the result.

pub mod explain;
pub mod health;
pub mod migrate;
pub mod optimize;
pub mod prune;
pub mod replay;
pub mod report;
pub mod run;
pub mod status;
