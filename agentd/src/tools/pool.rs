//! The tool pool: a fixed set of executor actors that run tool calls, so that the concurrency of
//! tool work is bounded across all sessions. A call that panics becomes an error result and the
//! executor that ran it is restarted by its supervisor. Cancel is a hard boundary: waiting for
//! an executor ends at once, a cancelled call never starts, and an executor is free again only
//! when its work is over.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use kameo::prelude::*;
use kameo::supervision::RestartPolicy;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use super::gate::EffectGate;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq, kameo::Reply)]
pub struct ToolOutput {
    /// What the model receives.
    pub output: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// Images the model receives with the result (`read` of an image), stored already.
    pub images: Vec<protocol::ImageRef>,
}

impl ToolOutput {
    /// A successful result.
    pub(crate) fn ok(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A failed result.
    pub(crate) fn error(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// A tool call ready to run on an executor.
pub(crate) type ToolJob = Pin<Box<dyn Future<Output = ToolOutput> + Send>>;

/// The result text of a call that was running when its run was cancelled.
pub(crate) const INTERRUPTED_RUNNING: &str = "[interrupted: the run was cancelled]";

/// An actor that runs one tool call at a time.
#[derive(Clone)]
pub(crate) struct ToolExecutor;

impl Actor for ToolExecutor {
    type Args = ();
    type Error = std::convert::Infallible;

    async fn on_start(_: (), _: ActorRef<Self>) -> Result<Self, Self::Error> {
        Ok(ToolExecutor)
    }
}

/// Run a job on an executor.
pub(crate) struct Execute {
    job: ToolJob,
    cancel: CancellationToken,
    gate: Arc<EffectGate>,
    /// Puts the executor back in the pool when dropped: only once the job is over.
    lease: Lease,
}

/// What became of a job on an executor.
enum Ending {
    Finished(std::thread::Result<ToolOutput>),
    Cancelled,
}

impl Message<Execute> for ToolExecutor {
    /// `None` when the call was cancelled before it started.
    type Reply = DelegatedReply<Option<ToolOutput>>;

    async fn handle(
        &mut self,
        msg: Execute,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> DelegatedReply<Option<ToolOutput>> {
        let (delegated, sender) = ctx.reply_sender();
        let Execute {
            job,
            cancel,
            gate,
            lease,
        } = msg;
        let reply = |output| {
            if let Some(sender) = sender {
                sender.send(output);
            }
        };
        if cancel.is_cancelled() && gate.cancel() {
            reply(None);
            return delegated;
        }
        let mut job = AssertUnwindSafe(job).catch_unwind();
        let ending = tokio::select! {
            biased;
            result = &mut job => Ending::Finished(result),
            () = cancel.cancelled() => Ending::Cancelled,
        };
        let result = match ending {
            Ending::Finished(result) => result,
            // The cancel won: the caller hears so at once, and this executor stays busy until
            // the work is really over (tools stop soon after a cancel).
            Ending::Cancelled if gate.cancel() => {
                reply(Some(ToolOutput::error(INTERRUPTED_RUNNING)));
                let _ = job.await;
                drop(lease);
                return delegated;
            }
            // The call's effect was already under way: its own result tells what happened.
            Ending::Cancelled => job.await,
        };
        match result {
            Ok(output) => reply(Some(output)),
            Err(panic) => {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                tracing::error!("tool panicked: {text}; restarting its executor");
                reply(Some(ToolOutput::error(format!(
                    "the tool failed unexpectedly: {text}"
                ))));
                drop(lease);
                // Panic again so that the supervisor restarts this executor with fresh state.
                std::panic::resume_unwind(panic);
            }
        }
        drop(lease);
        delegated
    }
}

/// A handle to the executors; cheap to clone.
#[derive(Clone)]
pub(crate) struct ToolPool {
    idle: Arc<Mutex<Vec<ActorRef<ToolExecutor>>>>,
    permits: Arc<Semaphore>,
    all: Arc<Vec<ActorRef<ToolExecutor>>>,
}

/// An executor taken from the pool; returned (with its permit) when dropped, which happens
/// when its job is over, or at once when the job never reached it.
struct Lease {
    idle: Arc<Mutex<Vec<ActorRef<ToolExecutor>>>>,
    executor: Option<ActorRef<ToolExecutor>>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(executor) = self.executor.take() {
            self.idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(executor);
        }
    }
}

impl ToolPool {
    /// The default size: twice the cores, at least 4 (docs/architecture.md#processes-and-actors).
    pub(crate) fn default_size() -> usize {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        (cores * 2).max(4)
    }

    /// Spawns `size` executors supervised by `supervisor`, which restarts one that fails.
    pub(crate) async fn spawn<S: Actor>(supervisor: &ActorRef<S>, size: usize) -> ToolPool {
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

    /// Runs `job` on the next free executor, waiting for one when all are busy. A cancel ends
    /// the wait at once, and a job whose run was cancelled never starts: `None` then. A job
    /// cancelled while it runs is answered at once (unless `gate` shows its effect was already
    /// under way), and its executor rejoins the pool only when the job is really over.
    pub(crate) async fn run(
        &self,
        job: ToolJob,
        cancel: &CancellationToken,
        gate: Arc<EffectGate>,
    ) -> Option<ToolOutput> {
        let permit = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            permit = self.permits.clone().acquire_owned() => permit,
        };
        let Ok(permit) = permit else {
            return Some(ToolOutput::error("the tool pool is shut down"));
        };
        if cancel.is_cancelled() {
            return None;
        }
        let executor = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let Some(executor) = executor else {
            return Some(ToolOutput::error("no tool executor is free"));
        };
        let lease = Lease {
            idle: self.idle.clone(),
            executor: Some(executor.clone()),
            _permit: permit,
        };
        let execute = Execute {
            job,
            cancel: cancel.clone(),
            gate,
            lease,
        };
        match executor.ask(execute).await {
            Ok(output) => output,
            Err(err) => Some(ToolOutput::error(format!(
                "the tool executor failed: {err}"
            ))),
        }
    }

    /// Stops every executor.
    pub(crate) async fn stop(&self) {
        self.permits.close();
        for executor in self.all.iter() {
            let _ = executor.stop_gracefully().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

    struct Parent;

    impl Actor for Parent {
        type Args = ();
        type Error = std::convert::Infallible;

        async fn on_start(_: (), _: ActorRef<Self>) -> Result<Self, Self::Error> {
            Ok(Parent)
        }
    }

    /// Runs `job` with a token nobody cancels.
    async fn run(pool: &ToolPool, job: ToolJob) -> ToolOutput {
        pool.run(job, &CancellationToken::new(), Arc::default())
            .await
            .expect("started")
    }

    const WAIT: Duration = Duration::from_secs(20);

    #[tokio::test]
    async fn a_panicking_job_becomes_an_error_and_the_pool_keeps_working() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 1).await;
        let output = run(&pool, Box::pin(async { panic!("boom") })).await;
        assert!(output.is_error);
        assert!(output.output.contains("boom"), "{}", output.output);
        // The single executor was restarted and serves the next job.
        let output = run(&pool, Box::pin(async { ToolOutput::ok("fine") })).await;
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
            run(
                &pool,
                Box::pin(async move {
                    barrier.wait().await;
                    ToolOutput::ok("met")
                }),
            )
        });
        let outputs = tokio::time::timeout(WAIT, futures::future::join_all(jobs))
            .await
            .expect("both jobs ran at once");
        assert!(outputs.iter().all(|o| o.output == "met"));
    }

    #[tokio::test]
    async fn jobs_beyond_the_pool_size_wait_for_a_free_executor() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 2).await;
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let jobs = (0..6).map(|_| {
            let (running, peak) = (running.clone(), peak.clone());
            run(
                &pool,
                Box::pin(async move {
                    let now = running.fetch_add(1, SeqCst) + 1;
                    peak.fetch_max(now, SeqCst);
                    tokio::task::yield_now().await;
                    running.fetch_sub(1, SeqCst);
                    ToolOutput::ok("")
                }),
            )
        });
        futures::future::join_all(jobs).await;
        assert!(peak.load(SeqCst) <= 2);
    }

    /// A job that holds its executor until `release` is notified.
    fn held(release: Arc<tokio::sync::Notify>) -> ToolJob {
        Box::pin(async move {
            release.notified().await;
            ToolOutput::ok("released")
        })
    }

    #[tokio::test]
    async fn a_cancel_ends_the_wait_for_an_executor_and_the_call_never_starts() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 1).await;
        let release = Arc::new(tokio::sync::Notify::new());
        let busy = tokio::spawn({
            let pool = pool.clone();
            let job = held(release.clone());
            async move { run(&pool, job).await }
        });
        let started = Arc::new(AtomicBool::new(false));
        let cancel = CancellationToken::new();
        let waiting = tokio::spawn({
            let (pool, cancel, started) = (pool.clone(), cancel.clone(), started.clone());
            async move {
                let job: ToolJob = Box::pin(async move {
                    started.store(true, SeqCst);
                    ToolOutput::ok("ran")
                });
                pool.run(job, &cancel, Arc::default()).await
            }
        });
        cancel.cancel();
        let outcome = tokio::time::timeout(WAIT, waiting)
            .await
            .expect("the cancel ends the wait")
            .unwrap();
        assert_eq!(outcome, None);
        release.notify_one();
        assert_eq!(busy.await.unwrap().output, "released");
        // The executor is free, and the cancelled job never ran on it.
        let output = run(&pool, Box::pin(async { ToolOutput::ok("next") })).await;
        assert_eq!(output.output, "next");
        assert!(!started.load(SeqCst));
    }

    #[tokio::test]
    async fn an_executor_is_free_again_only_when_its_cancelled_work_is_over() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 1).await;
        let release = Arc::new(tokio::sync::Notify::new());
        let finished = Arc::new(AtomicBool::new(false));
        let cancel = CancellationToken::new();
        let slow: ToolJob = {
            let (release, finished) = (release.clone(), finished.clone());
            // Work that does not stop at once when cancelled.
            Box::pin(async move {
                release.notified().await;
                finished.store(true, SeqCst);
                ToolOutput::ok("late")
            })
        };
        let first = tokio::spawn({
            let (pool, cancel) = (pool.clone(), cancel.clone());
            async move { pool.run(slow, &cancel, Arc::default()).await }
        });
        // Wait until the job holds the executor.
        while pool.permits.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        cancel.cancel();
        let output = tokio::time::timeout(WAIT, first).await.unwrap().unwrap();
        assert_eq!(output, Some(ToolOutput::error(INTERRUPTED_RUNNING)));
        // The next job waits for the cancelled one to be really over.
        let next = tokio::spawn({
            let (pool, finished) = (pool.clone(), finished.clone());
            async move {
                let job: ToolJob =
                    Box::pin(async move { ToolOutput::ok(finished.load(SeqCst).to_string()) });
                run(&pool, job).await
            }
        });
        release.notify_one();
        assert_eq!(next.await.unwrap().output, "true");
    }

    #[tokio::test]
    async fn a_call_whose_effect_was_under_way_reports_its_own_result() {
        let parent = Parent::spawn(());
        let pool = ToolPool::spawn(&parent, 1).await;
        let gate = Arc::new(EffectGate::new());
        let cancel = CancellationToken::new();
        let committed = Arc::new(tokio::sync::Notify::new());
        let job: ToolJob = {
            let (gate, cancel, committed) = (gate.clone(), cancel.clone(), committed.clone());
            Box::pin(async move {
                assert!(gate.commit());
                committed.notify_one();
                cancel.cancelled().await;
                ToolOutput::ok("written")
            })
        };
        let call = tokio::spawn({
            let (pool, cancel) = (pool.clone(), cancel.clone());
            async move { pool.run(job, &cancel, gate).await }
        });
        committed.notified().await;
        cancel.cancel();
        let output = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
        assert_eq!(output, Some(ToolOutput::ok("written")));
    }
}
