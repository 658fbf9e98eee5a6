//! A model of one lane's launches, explored exhaustively: three launchers that race, each
//! with its watcher and agent, any of them killed at any step. Each step that holds the
//! writer lock is one atomic step here, as the store makes it; the decisions are the real
//! ones (`lane_busy_with`, `may_start`) over the real ledger fold, with the liveness of the
//! model's processes. After every step: never two agents alive, and every live agent's
//! launch intended and started on the record. In every state with nothing left to do, the
//! lane is free again.

use std::collections::HashSet;

use super::*;
use crate::ledger::{Driver, RunStarted, fold_exited, fold_intended, fold_run_started, fold_started};

const RUN: &str = "r";
const LANE: &str = "b";
const LAUNCHERS: usize = 3;

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Launcher {
    Idle,
    /// Intended launch n; the watcher is not started yet.
    Intended(u64),
    /// Watcher started; waits for the start's record.
    Waiting(u64),
    Done,
    Dead,
}

#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Watcher {
    None,
    /// Started for launch n; has not taken the lock yet.
    Ready(u64),
    /// Started the agent of launch n and waits on it.
    Waiting(u64),
    /// Reaped the agent of launch n; records the exit next.
    Reaped(u64),
    Done,
}

#[derive(Clone, Debug)]
struct World {
    ledger: LedgerState,
    launchers: [Launcher; LAUNCHERS],
    watchers: [Watcher; LAUNCHERS],
    agents: [bool; LAUNCHERS],
}

fn launcher_pid(i: usize) -> ProcessId {
    ProcessId { pid: 100 + i as u32, start_ticks: 1 }
}

fn agent_pid(i: usize) -> ProcessId {
    ProcessId { pid: 200 + i as u32, start_ticks: 1 }
}

impl World {
    fn new() -> World {
        let mut ledger = LedgerState::default();
        let driver = Driver { session: None, process: ProcessId { pid: 1, start_ticks: 1 } };
        let run = RunStarted { run: RUN.into(), working_copy: "/w".into(), lanes: vec![LANE.into()], driver };
        fold_run_started(&mut ledger, run, jiff::Timestamp::UNIX_EPOCH, false).unwrap();
        World { ledger, launchers: [Launcher::Idle; LAUNCHERS], watchers: [Watcher::None; LAUNCHERS], agents: [false; LAUNCHERS] }
    }

    fn key(&self) -> String {
        format!("{}{:?}{:?}{:?}", serde_json::to_string(&self.ledger).unwrap(), self.launchers, self.watchers, self.agents)
    }

    fn alive(&self, p: &ProcessId) -> bool {
        let i = (p.pid % 100) as usize;
        match p.pid / 100 {
            1 => matches!(self.launchers[i], Launcher::Intended(_) | Launcher::Waiting(_)),
            2 => self.agents[i],
            _ => false,
        }
    }

    fn lane(&self) -> &ledger::Lane {
        &self.ledger.runs[RUN].lanes[LANE]
    }

    fn pending(&self, n: u64) -> bool {
        self.lane().launches.iter().any(|x| x.launch == n && x.started.is_none() && x.exited.is_none())
    }

    fn exit(&mut self, n: u64, status: ExitStatus) {
        fold_exited(&mut self.ledger, LaunchExited { run: RUN.into(), lane: LANE.into(), launch: n, status }).unwrap();
    }

    /// Every state one step on, each with the step's name.
    fn next(&self) -> Vec<(String, World)> {
        let mut out = vec![];
        for i in 0..LAUNCHERS {
            match self.launchers[i] {
                Launcher::Idle => {
                    let mut w = self.clone();
                    // The locked decision and the intent, one step.
                    match lane_busy_with(RUN, LANE, self.lane(), &|p| self.alive(p)) {
                        Err(_) => w.launchers[i] = Launcher::Done,
                        Ok(abandoned) => {
                            for n in &abandoned {
                                let by = self.lane().launches.iter().find(|x| x.launch == *n).and_then(|x| x.launcher);
                                assert!(!by.is_some_and(|p| self.alive(&p)), "L{i} took launch {n} from its live launcher");
                            }
                            for n in abandoned {
                                w.exit(n, ExitStatus::NotStarted);
                            }
                            let n = w.lane().launches_total + 1;
                            let intent = LaunchIntended {
                                run: RUN.into(),
                                lane: LANE.into(),
                                launch: n,
                                role: "agent".into(),
                                command: vec!["agent".into()],
                                receipt: "/nonexistent/model/R".into(),
                                worktree: "/w".into(),
                                launcher: Some(launcher_pid(i)),
                            };
                            fold_intended(&mut w.ledger, intent, jiff::Timestamp::UNIX_EPOCH).unwrap();
                            w.launchers[i] = Launcher::Intended(n);
                        }
                    }
                    out.push((format!("L{i} decides"), w));
                }
                Launcher::Intended(n) => {
                    let mut w = self.clone();
                    w.launchers[i] = Launcher::Waiting(n);
                    w.watchers[i] = Watcher::Ready(n);
                    out.push((format!("L{i} starts its watcher"), w));
                }
                Launcher::Waiting(n) => {
                    // Sees the start, or gives up and settles its launch under the lock.
                    let mut w = self.clone();
                    if w.pending(n) {
                        w.exit(n, ExitStatus::NotStarted);
                    }
                    w.launchers[i] = Launcher::Done;
                    out.push((format!("L{i} ends"), w));
                }
                Launcher::Done | Launcher::Dead => {}
            }
            if matches!(self.launchers[i], Launcher::Intended(_) | Launcher::Waiting(_)) {
                let mut w = self.clone();
                w.launchers[i] = Launcher::Dead;
                out.push((format!("L{i} killed"), w));
            }
            match self.watchers[i] {
                Watcher::Ready(n) => {
                    let mut w = self.clone();
                    if may_start(&self.ledger, RUN, LANE, n).is_ok() {
                        let started = LaunchStarted {
                            run: RUN.into(),
                            lane: LANE.into(),
                            launch: n,
                            process: agent_pid(i),
                            stdout: "/o".into(),
                            stderr: "/e".into(),
                        };
                        fold_started(&mut w.ledger, started).unwrap();
                        w.agents[i] = true;
                        w.watchers[i] = Watcher::Waiting(n);
                    } else {
                        w.watchers[i] = Watcher::Done;
                    }
                    out.push((format!("W{i} takes the lock"), w));
                }
                Watcher::Waiting(n) if !self.agents[i] => {
                    let mut w = self.clone();
                    w.watchers[i] = Watcher::Reaped(n);
                    out.push((format!("W{i} reaps"), w));
                }
                Watcher::Reaped(n) => {
                    let mut w = self.clone();
                    w.exit(n, ExitStatus::Code { code: 0 });
                    w.watchers[i] = Watcher::Done;
                    out.push((format!("W{i} records the exit"), w));
                }
                _ => {}
            }
            if matches!(self.watchers[i], Watcher::Ready(_) | Watcher::Waiting(_) | Watcher::Reaped(_)) {
                let mut w = self.clone();
                w.watchers[i] = Watcher::Done;
                out.push((format!("W{i} killed"), w));
            }
            if self.agents[i] {
                let mut w = self.clone();
                w.agents[i] = false;
                out.push((format!("A{i} exits"), w));
            }
        }
        out
    }

    fn check(&self, path: &[String]) {
        let live: Vec<usize> = (0..LAUNCHERS).filter(|&i| self.agents[i]).collect();
        assert!(live.len() <= 1, "two agents alive after {path:?}");
        for i in live {
            let l = self.lane().launches.iter().find(|x| x.started == Some(agent_pid(i)));
            assert!(l.is_some(), "agent {i} alive without its launch started and intended on the record, after {path:?}");
        }
        if self.next().is_empty() {
            assert!(lane_busy_with(RUN, LANE, self.lane(), &|p| self.alive(p)).is_ok(), "the lane stays held after {path:?}");
        }
    }
}

#[test]
fn racing_launchers_killed_at_any_step_never_run_two_agents_of_a_lane() {
    let mut seen = HashSet::new();
    let mut stack = vec![(World::new(), Vec::<String>::new())];
    let mut started = 0usize;
    while let Some((world, path)) = stack.pop() {
        if !seen.insert(world.key()) {
            continue;
        }
        world.check(&path);
        for (step, next) in world.next() {
            if step.contains("takes the lock") && next.agents.iter().filter(|a| **a).count() > world.agents.iter().filter(|a| **a).count() {
                started += 1;
            }
            let mut p = path.clone();
            p.push(step);
            stack.push((next, p));
        }
    }
    assert!(seen.len() > 1_000, "the model explored {} states", seen.len());
    assert!(started > 0, "some agent starts");
}
