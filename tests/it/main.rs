//! All integration tests build into this one test binary (faster to link, one private
//! PostgreSQL shared by the database tests).

mod config;
mod db_schema;
mod local_pg;
mod sim;
mod sim_deploy;
mod sim_status;
mod support;
