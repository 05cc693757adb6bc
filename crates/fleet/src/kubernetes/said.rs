//! The Kubernetes guns in words, from [`resolve`]'s values (every default is filled there,
//! once): what `loadgen experiment plan` says the runner will do with them, and what a refusal
//! to use them untrusted names.

use std::path::Path;

use super::{resolve, KubeError};

/// What the runner will do with the guns `spec` names, a line each as a plan shows them: the
/// Job written (its pods, image, namespace/name, and manifest), applied with kubectl in
/// `context` (kubectl's current one; `None`: there is none) when the guns say `apply`, and
/// where the runner listens and the pods dial. A relative manifest is read from `dir` and
/// shown relative to it, as the file names it. `trust` ends each line that needs the user's
/// trust (the plan's "(run needs --trust-guns)"). [`resolve`]'s error when the guns cannot be
/// used.
pub fn plan_lines(
    spec: &order::Kubernetes,
    dir: &Path,
    context: Option<&str>,
    trust: &str,
) -> Result<Vec<String>, KubeError> {
    let resolved = resolve(spec, dir)?;
    let job = &resolved.job;
    let (namespace, name) = (&job.namespace, &job.name);
    let manifest = resolved
        .manifest
        .strip_prefix(dir)
        .unwrap_or(resolved.manifest.as_path());
    let mut lines = vec![format!(
        "writes  the guns' Job ({} pods of {}, {namespace}/{name}) to {}",
        job.count,
        job.image,
        manifest.display()
    )];
    if resolved.apply {
        lines.push(format!(
            "applies it and its Secret with your kubectl, in its context {} (Showdown's own Job {namespace}/{name} there is replaced; one it did not make is refused){trust}",
            context.unwrap_or("(none: kubectl config use-context NAME)")
        ));
    }
    lines.push(format!(
        "listens on {} for the pods, which dial {}; sends them every order{trust}",
        resolved.listen, job.advertise
    ));
    Ok(lines)
}

/// The Job of the guns `spec` names, as a refusal to use them untrusted names it: "a Job of 3
/// gun pods of IMAGE in NAMESPACE/NAME", and when the runner applies it, with whose kubectl
/// and what it replaces; each value the user wrote made printable. `dir` is where a relative
/// manifest is read from. [`resolve`]'s error when the guns cannot be used.
pub fn job_in_words(spec: &order::Kubernetes, dir: &Path) -> Result<String, KubeError> {
    let resolved = resolve(spec, dir)?;
    let job = &resolved.job;
    Ok(format!(
        "a Job of {} gun pods of {} in {}/{}{}",
        job.count,
        redact::printable(&job.image),
        redact::printable(&job.namespace),
        redact::printable(&job.name),
        if resolved.apply {
            " (applied with your kubectl in its current context, replacing Showdown's own Job of that name)"
        } else {
            ""
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guns() -> order::Kubernetes {
        order::Kubernetes {
            count: 3,
            image: "me/loadgen:1".into(),
            listen: "127.0.0.1:7411".into(),
            advertise: None,
            namespace: None,
            job: None,
            cpus: None,
            memory: None,
            manifest: None,
            apply: false,
            wait_ns: None,
        }
    }

    #[test]
    fn a_plan_says_the_defaults_resolve_filled() {
        let dir = Path::new("experiments");
        let lines = plan_lines(&guns(), dir, None, " (run needs --trust-guns)").unwrap();
        assert_eq!(
            lines,
            [
                "writes  the guns' Job (3 pods of me/loadgen:1, default/showdown-guns) to showdown-guns.yaml",
                "listens on 127.0.0.1:7411 for the pods, which dial 127.0.0.1:7411; sends them every order (run needs --trust-guns)",
            ]
        );
        let applied = order::Kubernetes {
            apply: true,
            namespace: Some("load".into()),
            job: Some("guns".into()),
            manifest: Some("jobs/guns.yaml".into()),
            advertise: Some("203.0.113.9:7411".into()),
            ..guns()
        };
        let lines = plan_lines(&applied, dir, Some("lab"), "").unwrap();
        assert_eq!(
            lines,
            [
                "writes  the guns' Job (3 pods of me/loadgen:1, load/guns) to jobs/guns.yaml",
                "applies it and its Secret with your kubectl, in its context lab (Showdown's own Job load/guns there is replaced; one it did not make is refused)",
                "listens on 127.0.0.1:7411 for the pods, which dial 203.0.113.9:7411; sends them every order",
            ]
        );
        assert_eq!(
            job_in_words(&applied, dir).unwrap(),
            "a Job of 3 gun pods of me/loadgen:1 in load/guns (applied with your kubectl in its current context, replacing Showdown's own Job of that name)"
        );
    }

    #[test]
    fn guns_that_cannot_be_used_are_not_put_in_words() {
        let none = order::Kubernetes { count: 0, ..guns() };
        assert!(matches!(
            plan_lines(&none, Path::new("."), None, ""),
            Err(KubeError::Count)
        ));
        assert!(matches!(
            job_in_words(&none, Path::new(".")),
            Err(KubeError::Count)
        ));
    }
}
