//! Writing the site: every page, from the runs in the store.
//!
//! Each run is read once and turned into its figures (series and tables, a few MB for an
//! hour-long run); the figures are kept for the comparisons, the stored run itself is dropped
//! at once. Comparisons are made for every experiment with more than one run, for every label
//! shared by 2 to [`AUTO_COMPARISON_LIMIT`] runs, and for each `--compare`. A page that cannot
//! be drawn is listed on the index with the reason; the other pages are still written.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use store::vocabulary::Phase;

use maud::Markup;
use store::run::RunFilter;
use store::Store;

use crate::charts;
use crate::compare::{self, Comparison, Selection};
use crate::error::ReportError;
use crate::figures::{self, RunFigures};
use crate::model::flame::FlameData;
use crate::pages::{self, SiteIndex};

/// Above this many runs, a label gets no automatic comparison (its page says how to make one).
pub const AUTO_COMPARISON_LIMIT: usize = 20;

/// Differential flame graphs drawn for one comparison.
const MAX_DIFFERENTIALS: usize = 8;

/// Whether a run is an experiment's warm-up (left out of every figure).
fn is_warmup(labels: &BTreeMap<String, String>) -> bool {
    Phase::of(labels) == Some(Phase::Warmup)
}

/// What to draw, and where.
#[derive(Debug, Clone, Default)]
pub struct SiteOptions {
    pub out: PathBuf,
    /// Which runs get pages.
    pub filter: RunFilter,
    /// Only these runs (ids or names), when not empty.
    pub only: Vec<String>,
    pub comparisons: Vec<Selection>,
}

/// Writes `bytes` as the file `path`, replacing whatever is there: written beside it and renamed
/// over it, so that a symbolic link left at a page's name (in a shared site folder) is replaced,
/// not written through to the file it points at, and a reader never sees half a page. Pages are
/// readable by all, as a static site's are.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    probe::files::replace(path, bytes, 0o644)
}

/// What was written.
#[derive(Debug, Clone, Default)]
pub struct Site {
    pub index: PathBuf,
    /// Each run's page, by run id.
    pub run_pages: BTreeMap<String, PathBuf>,
    pub comparison_pages: Vec<PathBuf>,
    /// Each experiment's page, by experiment name.
    pub experiment_pages: BTreeMap<String, PathBuf>,
    pub pages: usize,
    pub bytes: u64,
    /// Pages that could not be drawn: (what, why).
    pub failures: Vec<(String, String)>,
}

struct Writer<'a> {
    out: &'a Path,
    site: Site,
    /// Pages written by this run of the site, relative to `out`.
    written: HashSet<String>,
}

impl Writer<'_> {
    fn page(&mut self, relative: &str, markup: Markup) -> Result<PathBuf, ReportError> {
        self.file(relative, markup.into_string().as_bytes())?;
        self.site.pages += 1;
        Ok(self.out.join(relative))
    }

    /// A run's page; a chart that cannot be drawn costs that page, not the site.
    fn run_page(
        &mut self,
        relative: &str,
        run: &RunFigures,
    ) -> Result<Option<PathBuf>, ReportError> {
        let drawn = charts::load_charts(run).and_then(|load| {
            let probes = run
                .probes
                .iter()
                .enumerate()
                .map(|(i, p)| charts::probe_charts(run, i, p))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((load, probes))
        });
        match drawn {
            Ok((load, probes)) => {
                let flames = self.flame_graphs(relative, run)?;
                self.page(relative, pages::run_page(run, &load, &probes, &flames))
                    .map(Some)
            }
            Err(e) => {
                self.site
                    .failures
                    .push((format!("run {} ({})", run.name, run.id), e.to_string()));
                Ok(None)
            }
        }
    }

    /// A file beside `page` (a flame graph), `PAGE.SUFFIX`; its name relative to the page.
    fn beside(&mut self, page: &str, suffix: &str, bytes: &[u8]) -> Result<String, ReportError> {
        let relative = format!("{}.{suffix}", page.trim_end_matches(".html"));
        self.file(&relative, bytes)?;
        Ok(beside_name(page, suffix))
    }

    /// A file of the site that is not a page.
    fn file(&mut self, relative: &str, bytes: &[u8]) -> Result<(), ReportError> {
        let path = self.out.join(relative);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        replace(&path, bytes).map_err(|source| ReportError::Write { path, source })?;
        self.site.bytes += bytes.len() as u64;
        self.written.insert(relative.to_string());
        Ok(())
    }

    /// Each profiled probe's flame graph beside the run's page (`page`), and the data of its
    /// window flame graph, named relative to it.
    fn flame_graphs(
        &mut self,
        page: &str,
        run: &RunFigures,
    ) -> Result<Vec<pages::Flames>, ReportError> {
        let mut names = Vec::new();
        for (i, probe) in run.probes.iter().enumerate() {
            // No stacks (the target never on a CPU when sampled): nothing to draw, the page
            // says so.
            let Some(profile) = probe.profile.as_ref().filter(|p| !p.folded.is_empty()) else {
                names.push(pages::Flames::default());
                continue;
            };
            let by_window = match crate::flame_data::ProfileData::of(profile) {
                Some(data) => {
                    // Filed under its own name, which the page's panel names too.
                    let file = format!("flame-{}.js", i + 1);
                    let script = data.script(&beside_name(page, &file));
                    Some(self.beside(page, &file, script.as_bytes())?)
                }
                None => None,
            };
            let data = FlameData::of_folded(
                &format!("Where the CPU went: {}", run.name),
                vec![format!(
                    "{}: {} samples of {} in the attack window; each box a call path, as wide as its share of them.",
                    run.name, profile.samples, probe.host.selector
                )],
                &profile.folded,
            );
            names.push(pages::Flames {
                whole: Some(self.flame_files(page, &format!("flame-{}", i + 1), &data)?),
                by_window,
            });
        }
        Ok(names)
    }

    /// A flame graph beside `page`: its SVG (`STEM.svg`) and its data for the page's script
    /// (`STEM.graph.js`, filed under its own name).
    fn flame_files(
        &mut self,
        page: &str,
        stem: &str,
        data: &FlameData,
    ) -> Result<pages::FlameFile, ReportError> {
        let svg = crate::flame::svg(data);
        let data_file = format!("{stem}.graph.js");
        let script = data.script(&beside_name(page, &data_file));
        Ok(pages::FlameFile {
            svg: self.beside(page, &format!("{stem}.svg"), svg.as_bytes())?,
            data: self.beside(page, &data_file, script.as_bytes())?,
        })
    }

    /// A flame graph shown in `page`, its SVG also written beside it as `file`.
    fn flame_inline(
        &mut self,
        page: &str,
        file: &str,
        data: &FlameData,
    ) -> Result<pages::FlameGraph, ReportError> {
        let svg = crate::flame::svg(data);
        Ok(pages::FlameGraph {
            file: self.beside(page, file, svg.as_bytes())?,
            svg,
            json: data.json(),
        })
    }

    /// Differential flame graphs beside a comparison's page: the first profiled run against
    /// each other profiled run (at most [`MAX_DIFFERENTIALS`]), as (that run's index, file
    /// name relative to the page).
    fn differentials(
        &mut self,
        page: &str,
        c: &Comparison,
    ) -> Result<Vec<(usize, pages::FlameFile)>, ReportError> {
        let profile = |i: usize| {
            c.runs[i]
                .target_probe()
                .and_then(|p| p.profile.as_ref())
                .filter(|p| !p.folded.is_empty())
        };
        let profiled: Vec<usize> = (0..c.runs.len())
            .filter(|&i| profile(i).is_some())
            .collect();
        let Some((&base, others)) = profiled.split_first() else {
            return Ok(Vec::new());
        };
        let names = c.run_names();
        let mut out = Vec::new();
        for &i in others.iter().take(MAX_DIFFERENTIALS) {
            let (Some(before), Some(after)) = (profile(base), profile(i)) else {
                continue;
            };
            let title = format!(
                "#{} {} against #{} {}",
                i + 1,
                names[i],
                base + 1,
                names[base]
            );
            let data = FlameData::between(
                &title,
                vec![format!(
                    "Each box a call path of #{}, as wide as its share of the samples; red: a larger share (with what it called) than in #{}, blue: a smaller one.",
                    i + 1,
                    base + 1
                )],
                (&format!("#{}", base + 1), &format!("#{}", i + 1)),
                &before.folded,
                &after.folded,
            );
            out.push((
                i,
                self.flame_files(page, &format!("diff-{}", i + 1), &data)?,
            ));
        }
        Ok(out)
    }

    /// Each setting's latest profiled gate's differential flame graph beside the experiment's
    /// page (`page`), its file named and its SVG held in `links` for the page to show inline.
    fn gate_flames(
        &mut self,
        page: &str,
        gates: &[analysis::ab::KeptGate],
        links: &mut pages::ExperimentLinks,
    ) -> Result<(), ReportError> {
        let mut latest: BTreeMap<&str, &analysis::ab::KeptGate> = BTreeMap::new();
        for k in gates {
            latest.insert(&k.setting, k);
        }
        for (i, (setting, k)) in latest.into_iter().enumerate() {
            let g = &k.gate;
            let Some(f) = g.functions.as_ref() else {
                continue;
            };
            let over = format!("{} rounds", f.candidate.rounds);
            let Some(data) =
                FlameData::of_estimates(&f.candidate, (&g.baseline, &g.candidate), &over)
            else {
                continue;
            };
            let graph = self.flame_inline(page, &format!("gate-{}.svg", i + 1), &data)?;
            links.gate_flames.insert(setting.to_string(), graph);
        }
        Ok(())
    }

    /// An experiment's history page, judged with the references its file names; its path,
    /// or `None` where a chart could not be drawn (listed with the reason).
    async fn history(
        &mut self,
        store: &Store,
        record: &store::experiment::ExperimentRecord,
        index: &mut SiteIndex,
    ) -> Result<Option<String>, ReportError> {
        let selection = analysis::history::read::Selection {
            references: &record.definition.references,
            measures: &[],
        };
        let h = analysis::history::read::history(
            store,
            &record.name,
            analysis::history::Config::default(),
            selection,
        )
        .await?;
        let drawn = h
            .series
            .iter()
            .map(|s| crate::history::series_chart(&h, s))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|series| {
                Ok(pages::HistoryCharts {
                    series,
                    host: crate::history::host_chart(&h)?,
                })
            });
        match drawn {
            Ok(drawn) => {
                let relative = pages::history_path(&record.name);
                self.page(&relative, pages::history_page(&h, &record.question, &drawn))?;
                index
                    .histories
                    .push((record.name.clone(), relative.clone()));
                Ok(Some(relative))
            }
            Err(e) => {
                self.site
                    .failures
                    .push((format!("history of {}", record.name), e.to_string()));
                Ok(None)
            }
        }
    }

    /// A comparison's page, listed on the index once written.
    fn comparison(&mut self, c: &Comparison, index: &mut SiteIndex) -> Result<(), ReportError> {
        match charts::comparison_charts(c) {
            Ok(list) => {
                let relative = pages::comparison_path(&c.title);
                let diffs = self.differentials(&relative, c)?;
                let path = self.page(&relative, pages::comparison_page(c, &list, &diffs))?;
                self.site.comparison_pages.push(path);
                index
                    .comparisons
                    .push((c.title.clone(), relative, c.runs.len()));
            }
            Err(e) => self
                .site
                .failures
                .push((format!("comparison {}", c.title), e.to_string())),
        }
        Ok(())
    }
}

/// How many sittings of `experiment` the runs and searches name (a sitting's label, else a
/// revision's), without reading any run: a history page is drawn from two.
fn sittings_of(
    experiment: &str,
    runs: &[figures::Headline],
    searches: &[analysis::capacity::Search],
) -> usize {
    use store::vocabulary::label;
    let of = |labels: &BTreeMap<String, String>| {
        labels
            .get(label::SITTING)
            .or_else(|| labels.get(label::REVISION))
            .cloned()
    };
    let mut seen: HashSet<String> = runs
        .iter()
        .filter(|h| h.experiment.as_deref() == Some(experiment))
        .filter_map(|h| of(&h.labels))
        .collect();
    seen.extend(
        searches
            .iter()
            .filter(|s| s.experiment.as_deref() == Some(experiment))
            .filter_map(|s| of(&s.labels)),
    );
    seen.len()
}

/// The name, relative to `page`, of its file `PAGE.SUFFIX`.
fn beside_name(page: &str, suffix: &str) -> String {
    let page = page.rsplit('/').next().unwrap_or(page);
    format!("{}.{suffix}", page.trim_end_matches(".html"))
}

/// Draws every page into `options.out`: the runs' pages, the groups', the labels' and the
/// comparisons', each experiment's, each search's, then the index of them all.
pub async fn write(store: &Store, options: &SiteOptions) -> Result<Site, ReportError> {
    std::fs::create_dir_all(&options.out).map_err(|source| ReportError::Write {
        path: options.out.clone(),
        source,
    })?;
    let mut w = Writer {
        out: &options.out,
        site: Site::default(),
        written: HashSet::new(),
    };
    // The pages' script and charting library, once for the whole site.
    for (path, bytes) in crate::assets::FILES {
        w.file(path, bytes)?;
    }
    let mut index = SiteIndex::default();
    let mut cache: HashMap<String, Arc<RunFigures>> = HashMap::new();
    let listings = w.runs(store, options, &mut index, &mut cache).await?;
    let merged = w.groups(store, &listings, &mut index, &cache).await?;
    let records = store.experiments().await?;
    w.labels(&records, &mut index, &cache)?;
    w.selected(store, options, &mut index, &mut cache).await?;
    let mut all: Vec<Arc<RunFigures>> = cache
        .values()
        .filter(|r| r.shard.is_none())
        .cloned()
        .collect();
    all.extend(merged.into_values());
    let searches = analysis::capacity::searches(store).await?;
    // What grew at each search's knee, read once: its page and its experiment's cite it.
    let mut knees: HashMap<String, crate::knee::Found> = HashMap::new();
    for s in &searches {
        knees.insert(s.id.clone(), crate::knee::of(store, s, &cache).await?);
    }
    let read = Read {
        all: &all,
        searches: &searches,
        cache: &cache,
        knees: &knees,
    };
    for record in &records {
        w.experiment(store, record, &read, &mut index).await?;
    }
    for search in &searches {
        w.search(search, &read, &mut index)?;
    }
    index.failures = w.site.failures.clone();
    w.site.index = w.page("index.html", pages::index(&index))?;
    Ok(w.site)
}

/// What every experiment's and search's page reads: the runs' figures (each shard's merged
/// group in place of its shards in `all`), the searches, and what grew at their knees.
struct Read<'a> {
    all: &'a [Arc<RunFigures>],
    searches: &'a [analysis::capacity::Search],
    cache: &'a HashMap<String, Arc<RunFigures>>,
    knees: &'a HashMap<String, crate::knee::Found>,
}

/// The runs by what ties them: each experiment's (not its warm-ups), each label's, and the
/// warm-ups.
struct Ties<'a> {
    experiments: BTreeMap<&'a str, Vec<String>>,
    labels: BTreeMap<(String, String), Vec<String>>,
    warmups: HashSet<&'a str>,
}

impl<'a> Ties<'a> {
    fn of(runs: &'a [figures::Headline]) -> Ties<'a> {
        let mut ties = Ties {
            experiments: BTreeMap::new(),
            labels: BTreeMap::new(),
            warmups: HashSet::new(),
        };
        for h in runs {
            if is_warmup(&h.labels) {
                ties.warmups.insert(&h.id);
            } else if let Some(e) = &h.experiment {
                ties.experiments.entry(e).or_default().push(h.id.clone());
            }
            for (k, v) in &h.labels {
                ties.labels
                    .entry((k.clone(), v.clone()))
                    .or_default()
                    .push(h.id.clone());
            }
        }
        ties
    }
}

impl Writer<'_> {
    /// Each run's page (the site's filter, or `--only`), its figures kept in `cache`; the runs'
    /// listings.
    async fn runs(
        &mut self,
        store: &Store,
        options: &SiteOptions,
        index: &mut SiteIndex,
        cache: &mut HashMap<String, Arc<RunFigures>>,
    ) -> Result<Vec<store::run::RunListing>, ReportError> {
        let mut only = Vec::new();
        for id in &options.only {
            only.push(store.resolve(id).await?);
        }
        let mut listings = store.list_runs(&options.filter).await?;
        if !only.is_empty() {
            listings.retain(|l| only.contains(&l.id));
        }
        for listing in &listings {
            let run = Arc::new(figures::load(store, &listing.id).await?);
            if let Some(path) = self.run_page(&pages::run_path(&run.id), &run)? {
                self.site.run_pages.insert(run.id.clone(), path);
            }
            index.runs.push(run.headline());
            cache.insert(run.id.clone(), run);
        }
        Ok(listings)
    }

    /// Each run group's page, its shards merged; the merged runs by group. A group's merged
    /// run stands for its shards wherever runs are compared (an experiment's cell is one run,
    /// whichever guns fired it).
    async fn groups(
        &mut self,
        store: &Store,
        listings: &[store::run::RunListing],
        index: &mut SiteIndex,
        cache: &HashMap<String, Arc<RunFigures>>,
    ) -> Result<HashMap<String, Arc<RunFigures>>, ReportError> {
        let mut groups: BTreeMap<String, usize> = BTreeMap::new();
        for l in listings {
            if let Some(shard) = &l.shard {
                *groups.entry(shard.group.clone()).or_default() += 1;
            }
        }
        let mut merged_groups = HashMap::new();
        for (group, shards) in &groups {
            let mut merged = figures::of(&analysis::group::load_group(store, group).await?);
            let mut guns: Vec<Arc<RunFigures>> = cache
                .values()
                .filter(|r| r.shard.as_ref().is_some_and(|s| &s.group == group))
                .cloned()
                .collect();
            guns.sort_by_key(|g| g.shard.as_ref().map(|s| s.index));
            merged.guns = guns;
            self.run_page(&pages::group_path(group), &merged)?;
            index.groups.push((group.clone(), *shards));
            merged_groups.insert(group.clone(), Arc::new(merged));
        }
        Ok(merged_groups)
    }

    /// Each label's page, and the comparisons made without asking: of an experiment's runs
    /// where it has no page of its own, and of a label's 2 to [`AUTO_COMPARISON_LIMIT`] runs.
    fn labels(
        &mut self,
        records: &[store::experiment::ExperimentRecord],
        index: &mut SiteIndex,
        cache: &HashMap<String, Arc<RunFigures>>,
    ) -> Result<(), ReportError> {
        let ties = Ties::of(&index.runs);
        let mut comparisons: Vec<(String, Vec<String>)> = Vec::new();
        for (experiment, ids) in &ties.experiments {
            // An experiment run from a file has a page of its own, which compares its cells.
            let has_page = records.iter().any(|r| r.name == *experiment);
            if ids.len() > 1 && !has_page {
                comparisons.push((pages::experiment_comparison_title(experiment), ids.clone()));
            }
        }
        for ((k, v), ids) in &ties.labels {
            // Warm-ups and the runner's bookkeeping labels are left out of comparisons; a
            // label every run of an experiment carries would only repeat its comparison.
            let measured: Vec<String> = ids
                .iter()
                .filter(|id| !ties.warmups.contains(id.as_str()))
                .cloned()
                .collect();
            let compared = !store::vocabulary::label::is_bookkeeping(k)
                && (2..=AUTO_COMPARISON_LIMIT).contains(&measured.len());
            if compared && !comparisons.iter().any(|(_, same)| *same == measured) {
                comparisons.push((format!("{k}={v}"), measured.clone()));
            }
            let runs: Vec<_> = index
                .runs
                .iter()
                .filter(|h| ids.contains(&h.id))
                .cloned()
                .collect();
            let comparison = comparisons
                .iter()
                .find(|(_, same)| *same == measured)
                .map(|(title, _)| pages::comparison_path(title));
            self.page(
                &pages::label_path(k, v),
                pages::label_page(k, v, &runs, comparison.as_deref()),
            )?;
        }
        for (title, ids) in comparisons {
            let runs = ids.iter().filter_map(|id| cache.get(id)).cloned().collect();
            self.comparison(&Comparison { title, runs }, index)?;
        }
        Ok(())
    }

    /// Each comparison asked for (`--compare`), with a page for each of its runs that has none
    /// (outside the site's filter, or a merged group), so that its links lead somewhere.
    async fn selected(
        &mut self,
        store: &Store,
        options: &SiteOptions,
        index: &mut SiteIndex,
        cache: &mut HashMap<String, Arc<RunFigures>>,
    ) -> Result<(), ReportError> {
        for selection in &options.comparisons {
            let runs = compare::load(store, selection, cache).await?;
            if runs.is_empty() {
                return Err(ReportError::EmptyComparison(selection.spec.clone()));
            }
            for run in &runs {
                let path = pages::page_of(run);
                if !self.written.contains(&path) {
                    self.run_page(&path, run)?;
                }
            }
            let title = selection.spec.clone();
            self.comparison(&Comparison { title, runs }, index)?;
        }
        Ok(())
    }

    /// An experiment's page (and its history's, its settings' comparisons, its gates' flame
    /// graphs); where it cannot be drawn, why, on the index.
    async fn experiment(
        &mut self,
        store: &Store,
        record: &store::experiment::ExperimentRecord,
        read: &Read<'_>,
        index: &mut SiteIndex,
    ) -> Result<(), ReportError> {
        // Its history first: drawn even where its latest sitting's page cannot be.
        let history = if sittings_of(&record.name, &index.runs, read.searches) >= 2 {
            self.history(store, record, index).await?
        } else {
            None
        };
        let mut fig = crate::experiment::figures(record, read.all);
        let drawn = fig.across().and_then(|across| {
            let overlays = fig
                .settings
                .iter()
                .map(|s| fig.overlay(s))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((across, overlays))
        });
        let failed =
            |e: &dyn std::fmt::Display| (format!("experiment {}", record.name), e.to_string());
        let (across, overlays) = match drawn {
            Ok(d) => d,
            Err(e) => {
                self.site.failures.push(failed(&e));
                return Ok(());
            }
        };
        let mut links = pages::ExperimentLinks {
            history,
            ..Default::default()
        };
        self.setting_comparisons(&record.name, &fig, &mut links, index)?;
        let mut capacity =
            match crate::search::experiment_capacity(record, read.searches, read.cache) {
                Ok(c) => c,
                Err(e) => {
                    self.site.failures.push(failed(&e));
                    return Ok(());
                }
            };
        crate::knee::cite_limits(&mut capacity, read.cache, read.knees);
        fig.slo = capacity
            .iter()
            .flat_map(|c| &c.targets)
            .flat_map(|t| &t.searches)
            .map(|s| s.slo.clone())
            .next();
        fig.gates = analysis::ab::gates(store, &record.name)
            .await?
            .into_iter()
            .filter(|g| g.file_label == record.file_label && g.scale == record.scale)
            .collect();
        let relative = pages::experiment_path(&record.name);
        self.gate_flames(&relative, &fig.gates, &mut links)?;
        let path = self.page(
            &relative,
            pages::experiment_page(&fig, &across, &overlays, &links, &capacity),
        )?;
        self.site.experiment_pages.insert(record.name.clone(), path);
        index
            .experiments
            .push((record.name.clone(), record.question.clone(), relative));
        Ok(())
    }

    /// A comparison of each setting's targets (their representative runs), where it has two
    /// or more, linked from the experiment's page.
    fn setting_comparisons(
        &mut self,
        experiment: &str,
        fig: &crate::experiment::ExperimentFigures,
        links: &mut pages::ExperimentLinks,
        index: &mut SiteIndex,
    ) -> Result<(), ReportError> {
        for setting in &fig.settings {
            let runs: Vec<Arc<RunFigures>> = fig
                .cells_of(setting)
                .iter()
                .filter_map(|c| c.representative().cloned())
                .collect();
            if runs.len() < 2 {
                continue;
            }
            let text = crate::experiment::setting_text(setting);
            let title = format!("{experiment} at {text}");
            links
                .comparisons
                .insert(text, pages::comparison_path(&title));
            self.comparison(&Comparison { title, runs }, index)?;
        }
        Ok(())
    }

    /// A search's page, with its knee's graph beside it; where it cannot be drawn, why, on the
    /// index.
    fn search(
        &mut self,
        search: &analysis::capacity::Search,
        read: &Read<'_>,
        index: &mut SiteIndex,
    ) -> Result<(), ReportError> {
        let charts = match crate::search::charts(search, read.cache) {
            Ok(charts) => charts,
            Err(e) => {
                let what = format!("search {}", search.name);
                self.site.failures.push((what, e.to_string()));
                return Ok(());
            }
        };
        let relative = pages::search_path(&search.id);
        let found = read
            .knees
            .get(&search.id)
            .unwrap_or(&crate::knee::Found::NoCapacity);
        let graph = match found.knee().and_then(crate::knee::graph) {
            Some(data) => Some(self.flame_inline(&relative, "knee.svg", &data)?),
            None => None,
        };
        self.page(
            &relative,
            pages::search_page(search, &charts, read.cache, found, graph.as_ref()),
        )?;
        index
            .searches
            .push((search.name.clone(), pages::finding(search), relative));
        Ok(())
    }
}
