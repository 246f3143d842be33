//! Results added together ([`RunResult::merge`]): every field named, so one added later and
//! not merged does not compile.

use super::*;

impl RunResult {
    /// This result as a line of a merged result's `runs` (a merged one: its own lines).
    fn lines(&self) -> Vec<RunLine> {
        if self.kind == Kind::Merge {
            return self.runs.clone();
        }
        vec![RunLine {
            label: self.label.clone().unwrap_or_else(|| self.target.clone()),
            ops: self.ops,
            ops_per_sec: self.ops_per_sec,
            latency_us: self.latency_us,
            errors: self.errors(),
            audit_match: self.audit.matches,
            intervals: self.series.as_ref().map_or_else(Vec::new, |s| s.lines(self.duration_s)),
        }]
    }

    /// Add `other` to this result: runs of one load from several hosts, side by side. Every
    /// field is named here: counts and histograms add, the window is the longest, the lists
    /// are joined; what cannot be added is said.
    pub fn merge(&mut self, other: &RunResult) {
        let runs = [self.lines(), other.lines()].concat();
        let RunResult {
            kind: _,
            label: _,
            // The load must be one (checked by the caller unless forced): the first's.
            target: _,
            targets,
            requests,
            protocol: _,
            engine,
            cores,
            connections,
            depth,
            duration_s,
            sent,
            ops,
            failed,
            accounted: _,
            ops_per_sec: _,
            messages_per_op: _,
            messages: _,
            messages_per_sec: _,
            connection_errors,
            failures,
            phases_us: _,
            status_counts,
            not_successful,
            error_samples,
            connects,
            reconnects,
            connect_rate_auto,
            set_up_in_s,
            first_sent_unix_s,
            repeat: _,
            due_while_busy,
            due_unsent,
            tls,
            layers,
            datagrams,
            bytes,
            latency_us: _,
            latency_uncorrected_us: _,
            schedule_lag_us: _,
            preflight,
            histograms,
            series,
            cpu_us_per_op: _,
            imbalance_pct: _,
            per_core,
            kernel_net,
            audit,
            server_watch,
            runs: _,
            // Checked again on the total by whoever asks (`merge --fail-if`).
            checks: _,
            // One load, one schedule: the first's, derived again from the merged series.
            stages: _,
            fleet: _,
        } = other;
        self.become_merge(runs);
        merge_targets(&mut self.targets, targets.as_deref());
        merge_kinds(&mut self.requests, requests.as_deref());
        self.merge_load(engine, cores, *connections, *depth);
        self.duration_s = self.duration_s.max(*duration_s);
        self.sent += sent;
        self.ops += ops;
        add_counts(&mut self.failed, failed);
        add_counts(&mut self.connection_errors, connection_errors);
        add_counts(&mut self.failures, failures);
        add_counts(&mut self.status_counts, status_counts);
        self.not_successful += not_successful;
        self.add_samples(error_samples);
        self.connects += connects;
        self.reconnects += reconnects;
        merge_option(&mut self.connect_rate_auto, connect_rate_auto, |a, b| a.add(b));
        merge_option(&mut self.set_up_in_s, set_up_in_s, |a, b| *a = a.max(*b));
        merge_option(&mut self.first_sent_unix_s, first_sent_unix_s, |a, b| *a = a.min(*b));
        // A merged result is not a repeat: its runs are in `runs`.
        self.repeat = None;
        self.due_while_busy += due_while_busy;
        self.due_unsent += due_unsent;
        merge_option(&mut self.tls, tls, |a, b| a.merge(b));
        crate::stats::layers_merge_into(&mut self.layers, layers.as_ref());
        merge_option(&mut self.datagrams, datagrams, |a, b| (a.tx, a.rx) = (a.tx + b.tx, a.rx + b.rx));
        self.bytes.merge(bytes);
        self.preflight.add(preflight);
        self.histograms.merge(histograms);
        merge_option(&mut self.series, series, |a, b| a.merge(b));
        let label = other.label.clone();
        self.per_core.extend(
            per_core.iter().map(|c| CoreResult { run: c.run.clone().or_else(|| label.clone()), ..c.clone() }),
        );
        self.kernel_net = KernelNet::merged(self.kernel_net, *kernel_net);
        self.audit.merge(audit);
        if self.server_watch.is_none() {
            self.server_watch = server_watch.clone();
        }
        self.derive();
    }

    /// This result becomes a merge of `runs`: a run's cores carry its label once it is merged
    /// with others; its checks are asked again of the total.
    fn become_merge(&mut self, runs: Vec<RunLine>) {
        // A fleet's account is of its own run: merged again, the total has none.
        self.fleet = None;
        if self.kind == Kind::Bench {
            let own = self.label.clone();
            for c in &mut self.per_core {
                c.run = c.run.take().or_else(|| own.clone());
            }
        }
        self.kind = Kind::Merge;
        self.label = None;
        self.runs = runs;
        self.checks = Vec::new();
    }

    /// Error samples not seen yet, up to [`MAX_ERROR_SAMPLES`].
    fn add_samples(&mut self, samples: &[String]) {
        for s in samples {
            if self.error_samples.len() < MAX_ERROR_SAMPLES && !self.error_samples.contains(s) {
                self.error_samples.push(s.clone());
            }
        }
    }

    /// What ran, of several runs: the engines named, the CPUs joined, the connections added.
    fn merge_load(&mut self, engine: &str, cores: &[usize], connections: usize, depth: usize) {
        if self.engine != engine && !self.engine.split('+').any(|e| e == engine) {
            self.engine = format!("{}+{engine}", self.engine);
        }
        for c in cores {
            if !self.cores.contains(c) {
                self.cores.push(*c);
            }
        }
        self.cores.sort_unstable();
        self.connections += connections;
        self.depth = self.depth.max(depth);
    }

    /// `results` added together, in order (`None`: there were none).
    pub fn merge_all<'a>(results: impl IntoIterator<Item = &'a RunResult>) -> Option<RunResult> {
        let mut results = results.into_iter();
        let mut total = results.next()?.clone();
        for r in results {
            total.merge(r);
        }
        Some(total)
    }
}

/// `--requests` kinds by label: the same one's counts and histogram added, a new one joined.
fn merge_kinds(ours: &mut Option<Vec<KindResult>>, theirs: Option<&[KindResult]>) {
    let Some(theirs) = theirs else { return };
    let ours = ours.get_or_insert_with(Vec::new);
    for k in theirs {
        match ours.iter_mut().find(|o| o.label == k.label) {
            Some(o) => o.add(k),
            None => ours.push(k.clone()),
        }
    }
}

/// Targets by URL: the same one's counts and histogram added, a new one joined.
fn merge_targets(ours: &mut Option<Vec<TargetResult>>, theirs: Option<&[TargetResult]>) {
    let Some(theirs) = theirs else { return };
    let ours = ours.get_or_insert_with(Vec::new);
    for t in theirs {
        match ours.iter_mut().find(|o| o.url == t.url) {
            Some(o) => {
                o.sent += t.sent;
                o.ops += t.ops;
                o.histogram.add(&t.histogram);
            }
            None => ours.push(t.clone()),
        }
    }
}

/// `b` merged into `a` by `both` where both are there; else whichever is.
fn merge_option<T: Clone>(a: &mut Option<T>, b: &Option<T>, both: impl FnOnce(&mut T, &T)) {
    match a {
        Some(a) => {
            if let Some(b) = b {
                both(a, b)
            }
        }
        None => *a = b.clone(),
    }
}
