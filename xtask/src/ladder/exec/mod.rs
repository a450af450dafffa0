//! The executor, apart from the climb: [`io`] runs a rung's [`Run`](super::rung::Run)s (a run
//! described as data: the step, what watches it, what runs with it) into the bundle and keeps
//! the rung's record of them; [`side`] runs steps beside a running target or on threads of
//! their own. The driver hands each rung an executor and reads the record it leaves.
//!
//! Must not: decide what runs next (`policy`), ask or print other than through the rung's bar,
//! or spawn other than through `process`.

mod io;
mod side;

pub(crate) use io::{Held, Io, Lines, View};
