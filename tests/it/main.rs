//! All integration tests build into this one test binary (faster to link, one private
//! PostgreSQL shared by the database tests).

mod backfill;
mod cli_hygiene;
mod cli_output;
mod client_abuse;
mod client_contract;
mod client_lifecycle;
mod config;
mod daemon_balance;
mod daemon_formats;
mod daemon_lease;
mod daemon_rounds;
mod daemon_run;
mod daemon_triggers;
mod db_member_fast_path;
mod db_schema;
mod faults;
mod hosts;
mod local_pg;
mod notify;
mod ops_metrics;
mod ops_queries;
mod optimizer;
mod optimizer_factors;
mod optimizer_formats;
mod optimizer_search;
mod peak;
mod replay;
mod report;
mod retention;
mod sim;
mod sim_demo;
mod sim_deploy;
mod sim_status;
mod solver_cores;
mod support;
