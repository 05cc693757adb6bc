//! `loadgen experiment run | plan | status FILE`: the `experiment` crate's runner with its
//! words on the terminal, and the pages drawn at the end.

use std::io::IsTerminal;
use std::time::Duration;

use experiment::file::Experiment;
use experiment::plan::{CellKind, Plan, PlanError, PlanOptions};
use experiment::runner::{self, CellState, RunOptions, Trust};

use crate::cli::{CellArgs, ExperimentArgs, ExperimentCommand, TrustArgs};
use crate::engine::shutdown::{Shutdown, Stop};
use crate::error::{Error, UsageError};
use crate::RunEnd;

fn read(cells: &CellArgs) -> Result<(Experiment, Plan), Error> {
    let mut experiment = Experiment::read(&cells.file)?;
    for (target, reference) in &cells.refs {
        experiment
            .file
            .set_ref(target, reference)
            .map_err(UsageError::Ref)?;
    }
    let options = plan_options(cells);
    let plan = experiment::plan::plan(&experiment, &options).map_err(|error| match error {
        // What the flags asked for (--scale, --only, --repetitions) is a usage error; the rest
        // is the file's.
        PlanError::Scale(_) | PlanError::NoCellMatches => Error::Usage(UsageError::PlanFlags {
            file: cells.file.clone(),
            error,
        }),
        PlanError::Repetitions | PlanError::CompareRounds(_) | PlanError::SearchRepetitions(_)
            if cells.repetitions.is_some() =>
        {
            Error::Usage(UsageError::Repetitions {
                file: cells.file.clone(),
                error,
            })
        }
        error => Error::Plan {
            file: cells.file.clone(),
            error,
        },
    })?;
    Ok((experiment, plan))
}

fn plan_options(cells: &CellArgs) -> PlanOptions {
    PlanOptions {
        scale: cells.scale,
        repetitions: cells.repetitions,
        only: cells.only.clone(),
    }
}

fn short(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs().max(1))).to_string()
}

/// What a file's SSH config does, as `plan` says it: checked as a run checks it (the
/// directives a gun's config may set, a proxy shown with what it runs), or why it is refused.
fn ssh_config_lines(path: &std::path::Path, trust: &Trust) -> Vec<String> {
    let checked = fleet::ssh::read_config(path)
        .and_then(|text| fleet::ssh::config_refusal(path, &text, true).map(|()| text));
    match checked {
        Err(refusal) => vec![format!("refuses {refusal}")],
        Ok(text) => {
            let mut lines = vec![format!(
                "checks  the SSH config {}: it sets only who the guns are and how to sign in (Host, HostName, User, Port, IdentityFile, timeouts, algorithms)",
                path.display()
            )];
            let confirmed = if trust.ssh_proxy {
                " (confirmed: --trust-ssh-proxy)"
            } else {
                " (run needs --trust-ssh-proxy)"
            };
            for proxy in fleet::ssh::config_proxies(&text) {
                lines.push(format!(
                    "runs    `{proxy}`, the SSH config's proxy{confirmed}"
                ));
            }
            lines
        }
    }
}

/// Runs an `experiment` command.
pub async fn run(args: &ExperimentArgs, shutdown: &Shutdown) -> Result<RunEnd, Error> {
    match &args.command {
        ExperimentCommand::Plan { cells, trust } => plan(cells, trust).await,
        ExperimentCommand::Status { cells } => {
            let (experiment, plan) = read(cells)?;
            let store = store::Store::open(&cells.db).await?;
            let sitting = runner::sitting(&store, &experiment, &plan, false).await?;
            let states = runner::states(&store, &experiment, &plan, sitting.as_deref()).await?;
            print!(
                "{}",
                crate::output::shown(&status_text(&experiment, &plan, &states))
            );
            Ok(RunEnd::Completed)
        }
        ExperimentCommand::Run {
            cells,
            retry_failed,
            again,
            report: pages,
            no_report,
            markdown,
            junit,
            json,
            trust,
        } => {
            let how = How {
                retry_failed: *retry_failed,
                again: *again,
                pages: (!no_report).then_some(pages.as_path()),
                written: Written {
                    markdown: markdown.as_deref(),
                    junit: junit.as_deref(),
                    json: json.as_deref(),
                },
            };
            run_file(cells, trust, &how, shutdown).await
        }
    }
}

/// `experiment plan`: the cells in order, everything the file would run, read and send, the
/// programs it needs, and each git ref resolved; refused where a run would be.
async fn plan(cells: &CellArgs, trust: &TrustArgs) -> Result<RunEnd, Error> {
    let (experiment, plan) = read(cells)?;
    print!("{}", plan_text(&experiment, &plan));
    let guns = experiment.file.guns.as_ref();
    // The cluster a file's `apply = true` would apply to, read (not changed) now.
    let applies = guns
        .and_then(|g| g.kubernetes.as_ref())
        .is_some_and(|k| k.apply);
    let kube_context = match applies {
        true => fleet::kubernetes::current_context().await.ok(),
        false => None,
    };
    print!(
        "{}",
        reach_text(&experiment, &trust_of(trust), kube_context)
    );
    let needed = needed(&experiment, &plan);
    print!("{}", needed_text(&needed));
    if experiment::tools::missing(&needed).is_some() {
        let missing = needed.into_iter().filter(|n| n.found.is_none()).collect();
        return Err(Error::MissingTools { missing });
    }
    // A file's SSH config the run would refuse (its proxies wait for the flag).
    if let Some(path) = guns.and_then(|g| g.ssh_config.as_ref()) {
        fleet::ssh::read_config(path)
            .and_then(|text| fleet::ssh::config_refusal(path, &text, true))
            .map_err(|e| Error::Guns(e.into()))?;
    }
    // Each ref resolved as a run would resolve it: one that names nothing fails here.
    for (target, reference, commit) in runner::resolve_refs(&experiment, &plan.targets).await? {
        println!(
            "builds  {} at {} = commit {}",
            redact::printable(&target),
            redact::printable(&reference),
            commit.get(..12).unwrap_or(&commit)
        );
    }
    Ok(RunEnd::Completed)
}

/// How `experiment run` runs a file: which cells again, and where its pages and a
/// comparison's verdicts go.
struct How<'a> {
    retry_failed: bool,
    again: bool,
    /// The site's folder, unless `--no-report`.
    pages: Option<&'a std::path::Path>,
    written: Written<'a>,
}

/// `experiment run`: every cell not kept yet, then the pages, then (for `[compare]`) the
/// gate's verdicts and its exit.
async fn run_file(
    cells: &CellArgs,
    trust: &TrustArgs,
    how: &How<'_>,
    shutdown: &Shutdown,
) -> Result<RunEnd, Error> {
    let (experiment, plan) = read(cells)?;
    eprintln!(
        "Experiment {}: {} cells, about {}. {}",
        redact::printable(&experiment.file.name),
        plan.cells.len(),
        short(plan.estimate()),
        redact::printable(&experiment.file.question)
    );
    let options = run_options(cells, trust, how, &experiment)?;
    let stop_rx = stop_signal(shutdown);
    let mut report = runner::run(&experiment, &options, stop_rx).await?;
    print!("{}", ran_text(&experiment.file.name, &report, cells));
    if let Some(pages) = how.pages {
        draw_pages(&cells.db, pages, &experiment.file.name, &mut report.gates).await?;
    }
    if experiment.file.compare.is_none() || report.interrupted {
        return Ok(if report.interrupted {
            RunEnd::Stopped
        } else {
            RunEnd::Completed
        });
    }
    compared_end(&report, &how.written)
}

/// The runner's options: the flags', with this host's `loadgen` as the gun, on the gun CPUs.
fn run_options(
    cells: &CellArgs,
    trust: &TrustArgs,
    how: &How<'_>,
    experiment: &Experiment,
) -> Result<RunOptions, Error> {
    let gun_cpus = experiment.file.placement.gun_cpus.as_ref();
    let gun = fleet::Local {
        loadgen: crate::environment::find_loadgen()?,
        cpus: gun_cpus.map(ToString::to_string),
    };
    pin_to(gun_cpus)?;
    Ok(RunOptions {
        plan: plan_options(cells),
        db: cells.db.clone(),
        retry_failed: how.retry_failed,
        again: how.again,
        gun,
        guns_settings: crate::environment::guns_settings(),
        live: std::io::stderr().is_terminal(),
        trust: trust_of(trust),
    })
}

/// What tells the runner to stop: true once `shutdown` is no longer running.
fn stop_signal(shutdown: &Shutdown) -> tokio::sync::watch::Receiver<bool> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut stopping = shutdown.subscribe();
    tokio::spawn(async move {
        while stopping.changed().await.is_ok() {
            if *stopping.borrow() != Stop::Running {
                let _ = stop_tx.send(true);
            }
        }
    });
    stop_rx
}

/// Draws the site into `dir`, shows the experiment's page, and gives each verdict that page.
async fn draw_pages(
    db: &str,
    dir: &std::path::Path,
    name: &str,
    gates: &mut [analysis::ab::Gate],
) -> Result<(), Error> {
    let site = crate::output::draw_site(db, dir).await?;
    let page = site.experiment_pages.get(name).unwrap_or(&site.index);
    println!("Report: open {}", page.display());
    for gate in gates {
        gate.pages = Some(page.display().to_string());
    }
    Ok(())
}

/// A comparison's end: its verdicts' exit (see [`gated`]), or a failure if a build went unmeasured.
fn compared_end(report: &runner::RunReport, written: &Written) -> Result<RunEnd, Error> {
    let end = gated(&report.gates, written)?;
    // A build that did not build, start, pass its checks or last its runs was not measured:
    // that is a failure of the gate, not "too noisy to tell" (exit 5, which CI jobs may let
    // pass).
    if let Some((cell, why)) = report.failed.first() {
        return Err(Error::Unmeasured {
            cell: cell.clone(),
            why: why.clone(),
            failed: report.failed.len(),
        });
    }
    Ok(end)
}

/// What a run of the file did: its cells run, failed and kept already, each failure, and how
/// to go on where it was interrupted.
fn ran_text(name: &str, report: &runner::RunReport, cells: &CellArgs) -> String {
    let mut out = format!(
        "{}: {} cells run ({} failed), {} kept already, in {}.\n",
        redact::printable(name),
        report.ran,
        report.failed.len(),
        report.skipped,
        short(report.elapsed)
    );
    for (cell, why) in &report.failed {
        out.push_str(&format!(
            "  failed: {}: {}\n",
            redact::printable(cell),
            redact::printable(why)
        ));
    }
    if report.interrupted {
        out.push_str(&format!(
            "Interrupted: run `loadgen experiment run {}` again to go on where it stopped.\n",
            cells.file.display()
        ));
    }
    out
}

/// Where a comparison's verdicts are written.
struct Written<'a> {
    markdown: Option<&'a std::path::Path>,
    junit: Option<&'a std::path::Path>,
    json: Option<&'a std::path::Path>,
}

/// A comparison's end: each setting's verdict printed (and written as Markdown, JUnit XML and
/// JSON where asked), the exit code the worst of them.
fn gated(gates: &[analysis::ab::Gate], to: &Written) -> Result<RunEnd, Error> {
    use analysis::ab::Outcome;
    for gate in gates {
        // A build's name and ref are the file's: shown, not obeyed, on the terminal.
        for line in gate.text().lines() {
            println!("{}", redact::printable(line));
        }
    }
    if gates.is_empty() {
        println!("inconclusive: no round ran every compared build (see the failed cells above)");
    }
    let write = |path: &std::path::Path, text: String, append: bool| -> Result<(), Error> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(path)
            .map_err(|source| Error::Write {
                path: path.to_path_buf(),
                source,
            })?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    if let Some(path) = to.markdown {
        let text: String = gates.iter().map(|g| g.markdown() + "\n").collect();
        write(path, text, true)?;
    }
    if let Some(path) = to.junit {
        write(path, analysis::ab::junit(gates), false)?;
    }
    if let Some(path) = to.json {
        let text = serde_json::to_string_pretty(gates).map_err(|source| Error::WriteJson {
            path: path.to_path_buf(),
            source,
        })?;
        write(path, text + "\n", false)?;
    }
    let outcomes: Vec<Outcome> = gates.iter().map(analysis::ab::Gate::outcome).collect();
    Ok(if outcomes.contains(&Outcome::Regression) {
        RunEnd::Regression
    } else if gates.is_empty() || outcomes.contains(&Outcome::Inconclusive) {
        RunEnd::CompareInconclusive
    } else {
        RunEnd::Completed
    })
}

/// Pins this process (and the threads it starts from now on) to the gun's CPUs, so that the
/// runner's own probe and upstream stay off the targets' CPUs.
fn pin_to(cpus: Option<&probe::cpus::CpuList>) -> Result<(), Error> {
    let Some(list) = cpus else { return Ok(()) };
    let mut set = rustix::thread::CpuSet::new();
    // The list was checked against this host's CPUs, each below `CpuSet::MAX_CPU`.
    for &cpu in list
        .cpus()
        .iter()
        .filter(|&&c| c < rustix::thread::CpuSet::MAX_CPU)
    {
        set.set(cpu);
    }
    rustix::thread::sched_setaffinity(None, &set).map_err(|source| Error::Pin {
        cpus: list.to_string(),
        source,
    })
}

fn trust_of(args: &TrustArgs) -> Trust {
    Trust {
        pass_env: args.pass_env.clone(),
        database: args.trust_database,
        probe_tokens: args.probe_tokens.clone(),
        guns: args.trust_guns,
        ssh_proxy: args.trust_ssh_proxy,
        send_store_url: args.send_store_url,
    }
}

/// The programs the plan's targets need on this host (`experiment::tools`).
fn needed(experiment: &Experiment, plan: &Plan) -> Vec<experiment::tools::Needed> {
    experiment::tools::needed(experiment, &plan.targets.iter().cloned().collect())
}

/// "needs   go, for server's build: /usr/bin/go", a line each, the missing ones said so.
pub fn needed_text(needed: &[experiment::tools::Needed]) -> String {
    needed
        .iter()
        .map(|n| {
            let line = match &n.found {
                Some(path) => format!("needs   {}, for {}: {}", n.program, n.why, path.display()),
                None => format!(
                    "needs   {}, for {}: MISSING (not found {})",
                    n.program, n.why, n.looked
                ),
            };
            // The file's words: shown, never obeyed (a name may hold escape codes).
            format!("{}\n", redact::printable(&redact::text(&line)))
        })
        .collect()
}

/// `plan`'s account of everything the file would run on this machine, read of the user's
/// environment and send, and to where; and what `run` will ask the user to confirm first: its
/// targets', its database's, this host's and its guns', a line each.
pub fn reach_text(experiment: &Experiment, trust: &Trust, kube_context: Option<String>) -> String {
    let file = &experiment.file;
    let mut lines: Vec<String> = Vec::new();
    for t in &file.targets {
        lines.extend(target_lines(t, trust));
    }
    for check in &file.checks {
        lines.push(format!(
            "sends   every target started by command or reached by URL: the check {}",
            check_text(check)
        ));
    }
    lines.extend(database_lines(experiment, trust));
    lines.extend(host_lines(file, trust));
    if let Some(guns) = &file.guns {
        lines.extend(guns_lines(guns, trust, kube_context));
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "\nWhat this file runs, reads and sends:\n{}\n",
        lines
            .iter()
            .map(|l| format!("  {}", redact::printable(l)))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// A command's words, each with its secrets taken out.
fn words(list: &[String]) -> String {
    list.iter()
        .map(|w| redact::text(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a target's spec reaches: its source, its build and command, its URL, its probe (and
/// that probe's token file), its checks.
fn target_lines(t: &experiment::file::TargetSpec, trust: &Trust) -> Vec<String> {
    let mut lines = Vec::new();
    let cwd = t
        .cwd
        .as_ref()
        .map(|d| format!(" (in {})", d.display()))
        .unwrap_or_default();
    if let Some(reference) = &t.git_ref {
        lines.push(format!(
            "reads   {}: its source at git ref {} (cloned with --shared into a temporary directory; your repository untouched)",
            t.name,
            redact::text(reference)
        ));
    }
    if let Some(build) = &t.build {
        lines.push(format!("runs    {}: build `{}`{cwd}", t.name, words(build)));
    }
    if let Some(command) = &t.command {
        lines.push(format!("runs    {}: `{}`{cwd}", t.name, words(command)));
    }
    if let Some(url) = &t.url {
        lines.push(format!(
            "sends   {}: requests to {}",
            t.name,
            redact::text(url)
        ));
    }
    if let Some(probe) = &t.probe {
        lines.push(format!("reads   {}: its probe at {probe}", t.name));
        let confirmed = trust.probe_tokens.iter().find(|(name, _)| *name == t.name);
        match (confirmed, &t.probe_token_file) {
            (Some((_, f)), _) => lines.push(format!(
                "sends   the contents of {} to {probe}, as {}'s probe token (confirmed: --probe-token-file)",
                f.display(),
                t.name
            )),
            (None, Some(f)) => lines.push(format!(
                "sends   the contents of {} to {probe}, as {}'s probe token (run needs --probe-token-file {}={}; never read otherwise)",
                f.display(),
                t.name,
                t.name,
                f.display()
            )),
            (None, None) => {}
        }
    }
    for check in &t.checks {
        lines.push(format!(
            "sends   {}: the check {}",
            t.name,
            check_text(check)
        ));
    }
    lines
}

/// What the file's database is used for: its URL (or the variable holding it), its schema,
/// its reset, the checks' queries.
fn database_lines(experiment: &Experiment, trust: &Trust) -> Vec<String> {
    let mut lines = Vec::new();
    let database = experiment.file.database();
    let named = database.url.is_some() || database.url_env.is_some();
    let confirm_database = if trust.database {
        " (confirmed: --trust-database)"
    } else {
        " (run needs --trust-database)"
    };
    match (&database.url, &database.url_env) {
        (Some(url), _) => lines.push(format!(
            "uses    the database {}, with the URL's password only{confirm_database}",
            redact::text(url)
        )),
        (None, Some(var)) => lines.push(format!(
            "uses    the database whose URL is in ${var}, with the URL's password only{confirm_database}"
        )),
        (None, None) => {}
    }
    let in_database = if named {
        "the file's database"
    } else {
        "the throwaway database"
    };
    if let Some(schema) = &database.schema {
        lines.push(format!(
            "runs    the SQL of {} in {in_database}, once",
            schema.display()
        ));
    }
    if let Some(reset) = &database.reset {
        lines.push(format!(
            "runs    the SQL `{reset}` in {in_database}, before every cell"
        ));
    }
    for check in all_checks(experiment) {
        if let Some(query) = &check.rows_added {
            lines.push(format!(
                "runs    the SQL `{query}` in {in_database}, around the check {}",
                check_text(check)
            ));
        }
    }
    lines
}

/// What the file reads on this host: its variables, its watched processes, the targets'
/// call stacks.
fn host_lines(file: &experiment::file::ExperimentFile, trust: &Trust) -> Vec<String> {
    let mut lines = Vec::new();
    for v in file.variables() {
        let confirm = if trust.pass_env.contains(&v.name) {
            " (confirmed: --pass-env)".to_string()
        } else if experiment::environment::looks_secret(&v.name) {
            format!(" (may hold a secret: run needs --pass-env {})", v.name)
        } else {
            format!(" (run needs --pass-env {})", v.name)
        };
        lines.push(format!("reads   ${} ({}){confirm}", v.name, v.field));
    }
    for w in &file.watches {
        let how = match (w.port, w.pid, &w.command) {
            (Some(port), _, _) => format!("the process listening on port {port}"),
            (_, Some(pid), _) => format!("process {pid}"),
            (_, _, Some(re)) => format!("the processes whose command matches `{re}`"),
            _ => "nothing".into(),
        };
        lines.push(format!(
            "reads   {how} on this host, from /proc, as {} (a probe of its own)",
            w.name
        ));
    }
    if let Some(p) = file.profile_config() {
        lines.push(format!(
            "reads   the local targets' on-CPU call stacks (perf_event_open's cpu-clock, {} Hz)",
            p.hz
        ));
    }
    lines
}

/// What the file's guns reach: the hosts over SSH (and their SSH config), or the Kubernetes
/// Job it writes and applies; the loadgen they run; the store's URL they get.
fn guns_lines(
    guns: &experiment::guns::GunsSpec,
    trust: &Trust,
    kube_context: Option<String>,
) -> Vec<String> {
    let mut lines = Vec::new();
    let confirm = if trust.guns {
        " (confirmed: --trust-guns)"
    } else {
        " (run needs --trust-guns)"
    };
    match &guns.kubernetes {
        Some(k) => kubernetes_lines(&mut lines, k, kube_context, confirm),
        None => ssh_lines(&mut lines, guns, trust, confirm),
    }
    if let Some(loadgen) = &guns.loadgen {
        lines.push(format!("runs    {loadgen} on the guns"));
    }
    match &guns.store_env_file {
        Some(f) => lines.push(format!("reads   the store's URL on the guns from {f}")),
        None if trust.send_store_url => lines.push(
            "sends   this runner's store URL to the guns (confirmed: --send-store-url)".into(),
        ),
        None => {}
    }
    lines
}

/// [`guns_lines`] for guns in Kubernetes: the Job written (and applied), and where pods dial
/// in, as `fleet::kubernetes::plan_lines` words them from the resolved guns (their defaults
/// filled there, once); guns that do not resolve (the file's check refuses them first) say why.
fn kubernetes_lines(
    lines: &mut Vec<String>,
    k: &order::Kubernetes,
    kube_context: Option<String>,
    confirm: &str,
) {
    // No directory: a relative manifest is shown as the file names it, beside the file.
    let dir = std::path::Path::new("");
    match fleet::kubernetes::plan_lines(k, dir, kube_context.as_deref(), confirm) {
        Ok(said) => lines.extend(said),
        Err(e) => lines.push(format!("refuses the guns: {e}")),
    }
}

/// [`guns_lines`] for guns over SSH: the hosts, and their SSH config checked.
fn ssh_lines(
    lines: &mut Vec<String>,
    guns: &experiment::guns::GunsSpec,
    trust: &Trust,
    confirm: &str,
) {
    let hosts = match &guns.from {
        Some(from) => format!("the guns of the lab (from = {from:?})"),
        None => guns.ssh.join(", "),
    };
    let config = guns
        .ssh_config
        .as_ref()
        .map(|c| format!(", with the SSH config {}", c.display()))
        .unwrap_or_default();
    lines.push(format!(
        "sends   every order over SSH to {hosts}{config}, signed in by your SSH agent{confirm}"
    ));
    if let Some(path) = &guns.ssh_config {
        lines.extend(ssh_config_lines(path, trust));
    }
}

/// A check as the plan lists it: its request and, when it has them, its headers' names.
fn check_text(check: &experiment::file::CheckSpec) -> String {
    let headers = if check.headers.is_empty() {
        String::new()
    } else {
        format!(
            " with the headers {}",
            check.headers.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    format!("{}{headers}", check.title())
}

/// Every check of the file, the file's own and each target's.
fn all_checks(experiment: &Experiment) -> Vec<&experiment::file::CheckSpec> {
    let file = &experiment.file;
    file.checks
        .iter()
        .chain(file.targets.iter().flat_map(|t| t.checks.iter()))
        .collect()
}

/// `plan`'s text: every cell in order, and the time it takes.
pub fn plan_text(experiment: &Experiment, plan: &Plan) -> String {
    let mut out = format!(
        "{} — {}\n{} cells ({} targets × {} settings × {} repetitions{}), about {}{}\n\n",
        redact::printable(&experiment.file.name),
        redact::printable(&experiment.file.question),
        plan.cells.len(),
        plan.targets.len(),
        plan.cells.len() / (plan.targets.len().max(1) * plan.repetitions.max(1) as usize).max(1),
        plan.repetitions,
        if plan.scale == 1.0 {
            String::new()
        } else {
            format!(", scaled ×{}", plan.scale)
        },
        short(plan.estimate()),
        if plan.cells.iter().any(|c| c.kind == CellKind::Search) {
            format!(" ({})", experiment::plan::SEARCH_ESTIMATE)
        } else {
            String::new()
        }
    );
    if let Some(auto) = plan.compare.as_ref().and_then(|c| c.auto()) {
        out.push_str(&format!(
            "The rounds are read after every round from round {} (a confidence sequence) and stop once every gated measure is decided: at most {} rounds{}, so the cells and time above are the most.\n\n",
            auto.min,
            plan.repetitions,
            auto.budget
                .map(|b| format!(", within {}", humantime::format_duration(b)))
                .unwrap_or_default()
        ));
    }
    if !plan.warnings.is_empty() {
        out.push_str("The generator may not keep the schedule of these cells on this host:\n");
        for w in &plan.warnings {
            out.push_str(&format!("  ! {}\n", redact::printable(w)));
        }
        out.push('\n');
    }
    if !plan.promises.is_empty() {
        out.push_str("What a share of capacity promises here:\n");
        for w in &plan.promises {
            out.push_str(&format!("  ~ {}\n", redact::printable(w)));
        }
        out.push('\n');
    }
    for cell in &plan.cells {
        out.push_str(&format!(
            "{:>4}  rep {}  {:<40}  {}\n",
            cell.number,
            cell.repetition,
            redact::printable(&cell.key()),
            redact::printable(&load_text(cell, plan.search.as_ref()))
        ));
    }
    out
}

fn load_text(
    cell: &experiment::plan::Cell,
    search: Option<&experiment::file::SearchSpec>,
) -> String {
    let l = &cell.load;
    let what = match &l.mix {
        Some(mix) => mix
            .iter()
            .map(|m| format!("{}×{}", m.weight, m.path))
            .collect::<Vec<_>>()
            .join(" + "),
        None => format!(
            "{} {}",
            l.method.as_deref().unwrap_or("GET"),
            l.path.as_deref().unwrap_or("/")
        ),
    };
    if let Some(search) = search.filter(|_| cell.kind == experiment::plan::CellKind::Search) {
        return format!(
            "{what}, a capacity search within {}{}",
            search.slo.join(" and "),
            l.batch
                .filter(|b| !b.is_zero())
                .map(|b| format!(", in {} batches", humantime::format_duration(b)))
                .unwrap_or_default()
        );
    }
    let how = match l.mode() {
        experiment::file::Mode::Open => match (&l.steps, l.rate) {
            (Some(s), _) => format!("open loop, steps {s:?} req/s"),
            (None, Some(r)) => format!(
                "open loop, {}{}{}",
                match r {
                    experiment::file::Rate::PerSecond(r) => format!("{r} req/s"),
                    share => format!("{share} of the capacity its search finds"),
                },
                l.connections
                    .map(|c| format!(" over at most {c} connections"))
                    .unwrap_or_default(),
                l.batch
                    .filter(|b| !b.is_zero())
                    .map(|b| format!(" in {} batches", humantime::format_duration(b)))
                    .unwrap_or_default()
            ),
            _ => "open loop".into(),
        },
        experiment::file::Mode::Closed => {
            format!("closed loop, {} connections", l.connections.unwrap_or(0))
        }
    };
    let length = match (l.requests, l.duration) {
        (Some(n), Some(d)) => format!("{n} requests or {}", short(d)),
        (Some(n), None) => format!("{n} requests"),
        (None, Some(d)) => short(d),
        (None, None) => String::new(),
    };
    format!("{what}, {how}, {length}")
}

/// `status`'s text: each cell's state.
pub fn status_text(experiment: &Experiment, plan: &Plan, states: &[CellState]) -> String {
    let count = |f: fn(&CellState) -> bool| states.iter().filter(|s| f(s)).count();
    let mut out = format!(
        "{}: {} done, {} failed, {} unfinished, {} to run (file {}, scale {})\n\n",
        experiment.file.name,
        count(|s| matches!(s, CellState::Done { .. })),
        count(|s| matches!(s, CellState::Failed { .. })),
        count(|s| matches!(s, CellState::Unfinished { .. })),
        count(|s| matches!(s, CellState::Pending)),
        Plan::file_label(experiment),
        plan.scale
    );
    for (cell, state) in plan.cells.iter().zip(states) {
        let state = match state {
            CellState::Pending => "to run".to_string(),
            CellState::Done { run } => format!("done      {}", store::run::short_id(run)),
            CellState::Failed { run, reason } => {
                format!("FAILED    {}  {reason}", store::run::short_id(run))
            }
            CellState::Unfinished { run } => {
                format!("unfinished {} (redone by run)", store::run::short_id(run))
            }
        };
        out.push_str(&format!(
            "{:>4}  rep {}  {:<40}  {state}\n",
            cell.number,
            cell.repetition,
            cell.key()
        ));
    }
    out
}
