//! Tools the agent can call, and the pool of executors that runs them.

pub mod pool;
