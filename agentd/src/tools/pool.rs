//! The tool pool: a fixed set of executor actors that run tool calls, so that the concurrency of
//! tool work is bounded across all sessions. A call that panics becomes an error result and the
//! executor that ran it is restarted by its supervisor.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use kameo::prelude::*;
use kameo::supervision::RestartPolicy;
use tokio::sync::Semaphore;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq, kameo::Reply)]
pub struct ToolOutput {
    /// What the model receives.
    pub output: String,
    /// Whether the call failed.
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            is_error: false,
        }
    }

    /// A failed result.
    pub fn error(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            is_error: true,
        }
    }
}

/// A tool call ready to run on an executor.
pub type ToolJob = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// An actor that runs one tool call at a time.
#[derive(Clone)]
pub struct ToolExecutor;

impl Actor for ToolExecutor {
    type Args = ();
    type Error = std::convert::Infallible;

    async fn on_start(_: (), _: ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(ToolExecutor)
    }
}

/// Run a job on an executor.
pub struct Execute(pub ToolJob);

impl Message<Execute> for ToolExecutor {
    type Reply = DelegatedReply<ToolOutput>;

    async fn handle(
        &mut self,
        msg: Execute,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> DelegatedReply<ToolOutput> {
        let (delegated, sender) = ctx.reply_sender();
        match AssertUnwindSafe(msg.0).catch_unwind().await {
            Ok(output) => {
                if let Some(sender) = sender {
                    sender.send(output);
                }
            }
            Err(panic) => {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                tracing::error!("tool panicked: {text}; restarting its executor");
                if let Some(sender) = sender {
                    sender.send(ToolOutput::error(format!(
                        "the tool failed unexpectedly: {text}"
                    )));
                }
                // Panic again so that the supervisor restarts this executor with fresh state.
                std::panic::resume_unwind(panic);
            }
        }
        delegated
    }
}

/// A handle to the executors; cheap to clone.
#[derive(Clone)]
pub struct ToolPool {
    idle: Arc<Mutex<Vec<ActorRef<ToolExecutor>>>>,
    permits: Arc<Semaphore>,
    all: Arc<Vec<ActorRef<ToolExecutor>>>,
}

/// Returns an executor to the idle list even when the caller is dropped mid-call.
struct Checkout<'a> {
    pool: &'a ToolPool,
    executor: Option<ActorRef<ToolExecutor>>,
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        if let Some(executor) = self.executor.take() {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(executor);
        }
    }
}

impl ToolPool {
    /// The default size: twice the cores, at least 4 (SPEC §2).
    pub fn default_size() -> usize {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        (cores * 2).max(4)
    }

    /// Spawns `size` executors supervised by `supervisor`, which restarts one that fails.
    pub async fn spawn<S: Actor>(supervisor: &ActorRef<S>, size: usize) -> ToolPool {
        let mut all = Vec::with_capacity(size.max(1));
        for _ in 0..size.max(1) {
            let executor = ToolExecutor::supervise(supervisor, ())
                .restart_policy(RestartPolicy::Transient)
                .restart_limit(u32::MAX, Duration::from_secs(1))
                .spawn()
                .await;
            all.push(executor);
        }
        ToolPool {
            idle: Arc::new(Mutex::new(all.clone())),
            permits: Arc::new(Semaphore::new(all.len())),
            all: Arc::new(all),
        }
    }

    /// How many executors the pool has.
    pub fn size(&self) -> usize {
        self.all.len()
    }

    /// Runs `job` on the next free executor, waiting for one when all are busy.
    pub async fn run(&self, job: ToolJob) -> ToolOutput {
        let Ok(_permit) = self.permits.acquire().await else {
            return ToolOutput::error("the tool pool is shut down");
        };
        let executor = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let checkout = Checkout {
            pool: self,
            executor,
        };
        let Some(executor) = checkout.executor.as_ref() else {
            return ToolOutput::error("no tool executor is free");
        };
        match executor.ask(Execute(job)).await {
            Ok(output) => output,
            Err(err) => ToolOutput::error(format!("the tool executor failed: {err}")),
        }
    }

    /// Stops every executor.
    pub async fn stop(&self) {
        self.permits.close();
        for executor in self.all.iter() {
            let _ = executor.stop_gracefully().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Parent;

    impl Actor for Parent {
        type Args = ();
        type Error = std::convert::Infallible;

        async fn on_start(_: (), _: ActorRef<Self>) -> Result<Self, Self::Error> {
            Ok(Parent)
        }
    }

    #[tokio::test]
    async fn a_panicking_job_becomes_an_error_and_the_pool_keeps_working() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 1).await;
        let output = pool.run(Box::pin(async { panic!("boom") })).await;
        assert!(output.is_error);
        assert!(output.output.contains("boom"), "{}", output.output);
        // The single executor was restarted and serves the next job.
        let output = pool.run(Box::pin(async { ToolOutput::ok("fine") })).await;
        assert_eq!(output, ToolOutput::ok("fine"));
    }

    #[tokio::test]
    async fn jobs_under_way_at_once_run_at_once() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 2).await;
        // Each job waits for the other: run one after the other, neither would finish.
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let jobs = (0..2).map(|_| {
            let barrier = barrier.clone();
            pool.run(Box::pin(async move {
                barrier.wait().await;
                ToolOutput::ok("met")
            }))
        });
        let outputs =
            tokio::time::timeout(Duration::from_secs(20), futures::future::join_all(jobs))
                .await
                .expect("both jobs ran at once");
        assert!(outputs.iter().all(|o| o.output == "met"));
    }

    #[tokio::test]
    async fn jobs_beyond_the_pool_size_wait_for_a_free_executor() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 2).await;
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let jobs = (0..6).map(|_| {
            let (running, peak) = (running.clone(), peak.clone());
            pool.run(Box::pin(async move {
                use std::sync::atomic::Ordering::SeqCst;
                let now = running.fetch_add(1, SeqCst) + 1;
                peak.fetch_max(now, SeqCst);
                tokio::task::yield_now().await;
                running.fetch_sub(1, SeqCst);
                ToolOutput::ok("")
            }))
        });
        futures::future::join_all(jobs).await;
        assert!(peak.load(std::sync::atomic::Ordering::SeqCst) <= 2);
    }
}
