//! A run's start in the session: a new run (when the configuration as it stands lets it) or a
//! resumed one, and the loop's task, given everything it needs and the port that is its only
//! way back to the session.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use kameo::prelude::*;
use protocol::{
    Delivery, ErrorInfo, Event, RunId, RunOptions, SessionState, StopReason, TokenUsage,
};
use tokio_util::sync::CancellationToken;

use super::SessionActor;
use super::door::ActorDoor;
use super::run_end::RunDone;
use super::run_slot::Resume;
use crate::mcp::SessionSide;
use crate::session::queue::Prompt;
use crate::session::run::{self, Nesting, RunOutcome, RunSetup, SessionPort, Start, Workplace};
use crate::store::Record;

impl SessionActor {
    /// Starts a run whose first message is `prompt`, unless the configuration file is broken and
    /// the daemon has no good one: then nothing is stored and the refusal says why.
    pub(super) fn start_run(
        &mut self,
        prompt: Prompt,
        delivery: Delivery,
        options: RunOptions,
        me: ActorRef<Self>,
    ) -> Result<RunId, ErrorInfo> {
        let warning = self.env.config.borrow().admit_run(options.ignore_config)?;
        let id = self.runs.next_id();
        let config = self.env.config();
        let max_turns = options
            .max_turns
            .or(self.durable.meta().max_turns)
            .unwrap_or(config.max_turns);
        // What a resumed run needs. Of the client's environment only the providers' addresses
        // are kept (never keys, nor an address with credentials in it): a resumed run talks to
        // the server it talked to, not to whatever the restarting shell names.
        let addresses = options
            .env
            .iter()
            .filter(|(key, value)| key.ends_with("_BASE_URL") && !value.contains('@'))
            .cloned()
            .collect();
        self.durable.record(&Record::Run {
            run: id,
            options: RunOptions {
                env: addresses,
                ..options.clone()
            },
        });
        let (profile, model) = self.run_names(&options);
        let names = config.names(profile, model, &options.env);
        self.emit(Event::RunStarted {
            run: id,
            trigger: delivery,
            max_turns,
            model: names.model.unwrap_or_default(),
            provider: names.provider,
        });
        let text_for_hooks = prompt.text.clone();
        self.push_user(prompt, delivery);
        if let Some(message) = self.workspace.sandbox_warning(self.shown.mode()) {
            self.emit(Event::Error { message });
        }
        if let Some(message) = warning {
            self.emit(Event::Error { message });
        }
        let start = Start {
            prompt: Some(text_for_hooks),
            resumed: None,
        };
        self.launch(id, options, max_turns, start, me);
        Ok(id)
    }

    /// Goes on with a run the daemon did not live to finish: same number, turn count and
    /// limits; the calls the stop left without a result are answered first. (Recovery closed
    /// it instead if the configuration as it stands refuses it.)
    pub(super) fn resume_run(&mut self, resume: Resume, me: ActorRef<Self>) {
        self.runs.restore_count(resume.run);
        self.emit(Event::RunResumed {
            run: resume.run,
            reason: resume.reason,
        });
        let admitted = self
            .env
            .config
            .borrow()
            .admit_run(resume.options.ignore_config);
        if let Ok(Some(message)) = admitted {
            self.emit(Event::Error { message });
        }
        let start = Start {
            prompt: None,
            resumed: Some(resume.resumed),
        };
        self.launch(resume.run, resume.options, resume.max_turns, start, me);
    }

    /// The provider profile and model a run with `options` names: the run's own, else the
    /// session's (the configured ones when neither names them).
    pub(super) fn run_names<'a>(
        &'a self,
        options: &'a RunOptions,
    ) -> (Option<&'a str>, Option<&'a str>) {
        let profile = options.provider.as_deref().or(self.shown.provider());
        let model = options.model.as_deref().or(self.shown.model());
        (profile, model)
    }

    /// Starts the loop's task for run `id`.
    fn launch(
        &mut self,
        id: RunId,
        options: RunOptions,
        max_turns: u32,
        start: Start,
        me: ActorRef<Self>,
    ) {
        let config = self.env.config();
        self.shown.set_state(SessionState::Running);
        // A daemon that comes up finds the runs its predecessor did not finish here.
        self.env.running.started(&self.shown.id().0, id.0);
        let cancel = CancellationToken::new();
        let (profile, model) = self.run_names(&options);
        let mut choice = config.choose(&self.env.http, profile, model, &options.env);
        if let Ok((provider, _)) = &mut choice.provider {
            provider.continue_chain(&self.responses_chain);
        }
        let names = config.names(profile, model, &options.env);
        let images = config
            .takes_images(Some(&names.provider), names.model.as_deref().unwrap_or(""))
            .map(|()| self.image_store());
        if let Err(reason) = &images
            && !crate::images::images_of(&self.history.shared()).is_empty()
        {
            self.emit(Event::Notice {
                text: format!("{reason}; this run sends the session's images as their names"),
            });
        }
        let children = self.task_setup(&options, &config);
        // A configured search service whose key is missing is not offered; the user is told.
        let search = match config.search_engine(&options.env) {
            Some(Ok(engine)) => Some(Arc::new(engine)),
            Some(Err(message)) => {
                self.emit(Event::Error { message });
                None
            }
            None => None,
        };
        self.workspace.read_skills(&self.env.paths.config_dir);
        let child = self.durable.meta().child.as_ref();
        let nesting = Nesting {
            children,
            allowed_tools: child.and_then(|c| c.tools.clone()),
            subagent: child.is_some(),
        };
        let env = Arc::new(self.workspace.command_env(&config));
        let code = self.env.lsp.covers_dir(self.cwd(), &env);
        let place = Workplace {
            side: SessionSide {
                id: self.shown.id().clone(),
                cwd: self.cwd().to_path_buf(),
                env,
            },
            files: self.workspace.files(),
            processes: self.env.processes.clone(),
            tools: self.env.tools.clone(),
            mcp: self.env.mcp.clone(),
            lsp: self.env.lsp.for_session(self.shown.id().clone()),
            code,
            checkpoints: config
                .checkpoints
                .enabled
                .then(|| self.workspace.checkpoints()),
            shells: self.shells.for_run(config.tools.background_shells()),
            web: self.env.web.clone(),
            search,
            images,
        };
        let door = ActorDoor::new(me.clone(), self.env.directory.clone());
        let setup = RunSetup {
            session: SessionPort::new(Arc::new(door)),
            run: id,
            choice,
            cancel: cancel.clone(),
            max_turns,
            config,
            stop: self.env.stop.clone(),
            start,
            place,
            nesting,
        };
        let task = tokio::spawn(async move {
            let outcome = AssertUnwindSafe(run::run(setup))
                .catch_unwind()
                .await
                .unwrap_or_else(|panic| {
                    let text = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    tracing::error!("agent loop panicked: {text}");
                    RunOutcome {
                        stop_reason: StopReason::Error,
                        turns: 0,
                        truncated: false,
                        usage: TokenUsage::default(),
                        error: Some(format!("internal error in the agent loop: {text}")),
                        nothing_changed: false,
                    }
                });
            let _ = me.tell(RunDone { run: id, outcome }).await;
        });
        self.runs.begin(id, cancel, options, task);
        tracing::info!(session = %self.shown.id(), run = id.0, "run started");
    }
}
