//! Malformed input: an error that names the offending player and field. A player that is
//! well-formed but unusable by the queue is not an error but a `Rejection`.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Error)]
pub enum PoolError {
    #[error("player {id:?}: field `{field}`: {problem}")]
    Player {
        id: String,
        field: &'static str,
        problem: String,
    },
    #[error("player #{index}: field `id`: {problem}")]
    PlayerIndex { index: usize, problem: String },
    #[error("history entry #{index}: {problem}")]
    History { index: usize, problem: String },
    #[error("queue model: {0}")]
    Model(String),
}
