//! The tests' helpers are the test kit's (`testkit/`): the private PostgreSQL, the client,
//! game server and daemon helpers, the invariants and the audit.

pub use matchmaker_testkit::*;
