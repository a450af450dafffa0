//! The integration tests, one binary (`cargo test --test it`), so that the test command links
//! them once: each file of this folder is the module of one part of the tool, its tests named
//! `module::test` (`cargo test --test it ladder::`), and what several modules share is
//! `support/`, declared once here. Tidy (tests/tidy.rs, std only) stays a binary of its own.
//!
//! The modules share one process and run side by side. A test that needs a process-wide
//! state (an environment variable its steps inherit, a signal handler, a subreaper) runs in a
//! copy of this binary started for it (`support::test_name` names it to `--exact`: exec.rs,
//! climb.rs), and a check of what a test left looks at what that test started (its marks,
//! pids, folders, job and container names), never at everything this process started.
//!
//! Must not: hold tests itself, or change the process's environment, working directory or
//! signal dispositions, which every module's tests would see.

mod support;

mod ablate;
mod analyze;
mod archive;
mod bundle;
mod cli_surface;
mod climb;
mod container;
mod docs_commands;
mod doctor;
mod dump;
mod endings;
mod exec;
mod hang;
mod ladder;
mod leaves;
mod newcomer;
mod prompts;
mod provenance;
mod recipe;
mod recipes_builtin;
mod repro;
mod secrets;
mod secrets_corpus;
mod secrets_matrix;
mod sites;
mod slurm;
mod ssh;
mod standins;
mod unbuilt;
