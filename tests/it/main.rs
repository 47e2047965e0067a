//! All integration tests build into this one test binary (faster to link, one private
//! PostgreSQL shared by the database tests).

mod backfill;
mod cli_hygiene;
mod cli_output;
mod client_abuse;
mod client_contract;
mod client_lifecycle;
mod config;
mod countdown;
mod daemon_balance;
mod daemon_formats;
mod daemon_lease;
mod daemon_rounds;
mod daemon_run;
mod daemon_triggers;
mod db_member_fast_path;
mod db_schema;
mod deploy_files;
mod deploy_samples;
mod failure_paths;
mod faults;
mod hosts;
mod layers;
mod local_pg;
mod meet;
mod migrations;
mod notify;
mod ops_metrics;
mod ops_queries;
mod optimize_cli;
mod ready_check;
mod recent_matches;
mod refusals;
mod replay;
mod report;
mod retention;
mod roles;
mod sim_status;
mod solver_cores;
mod support;
mod tenancy_daemon;
mod tenancy_ids;
mod tenancy_limits;
mod tenancy_notify;

// The lab's replica fleet and client load, shared with the fault tests until the test kit
// holds them: they name only the `matchmaker` crate.
#[allow(dead_code)]
#[path = "../../lab/src/fleet.rs"]
mod fleet;
#[allow(dead_code)]
#[path = "../../lab/src/load.rs"]
mod load;
