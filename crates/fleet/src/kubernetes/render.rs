//! The objects a Kubernetes sitting of guns is made of, rendered and nothing else: one Indexed
//! Job (its pods the guns, one a node, suspended until the runner listens) and the Secret its
//! pods dial the runner with. No CRD, no operator: `kubectl apply -f -` takes them.

use serde_json::{json, Value};

/// The `app.kubernetes.io/managed-by` label on what the runner renders: what it applies
/// replaces only objects that carry it.
pub const MANAGED_BY: &str = "showdown";

/// Where a pod finds its Secret's files.
pub const SECRETS_DIR: &str = "/var/run/secrets/showdown";
/// `loadgen` in the image (the repository's Dockerfile puts it there).
pub const LOADGEN: &str = "/usr/local/bin/loadgen";
/// The gun's container's name, which the Job's failure policy names.
pub const CONTAINER: &str = "gun";
/// The image's user (the Dockerfile's).
const USER: u32 = 10001;
/// The Kubernetes versions whose schemas the rendered objects are checked against (the
/// suite's `kubernetes-validate`): the last three minor versions it carries.
pub const VALIDATED: [&str; 3] = ["1.35.0", "1.36.0", "1.37.0"];
/// How long a finished Job stays for `kubectl logs` before Kubernetes deletes it.
pub const TTL_SECONDS: u32 = 600;

/// What the Job is rendered from, every default resolved.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub name: String,
    pub namespace: String,
    pub count: u32,
    pub image: String,
    /// `host:port` the pods dial.
    pub advertise: String,
    pub cpus: u32,
    pub memory: String,
}

impl JobSpec {
    /// The Secret's name.
    pub fn secret(&self) -> String {
        format!("{}-dial", self.name)
    }

    fn labels(&self) -> Value {
        json!({
            "app.kubernetes.io/name": "showdown-gun",
            "app.kubernetes.io/managed-by": MANAGED_BY,
            "showdown.dev/guns": self.name,
        })
    }

    /// The Indexed Job: `completions = parallelism = count`, an index failed (never replaced)
    /// on the gun's own non-zero exit or a disruption, Guaranteed QoS with whole CPUs, one gun a
    /// node, suspended until the runner resumes it, deleted `TTL_SECONDS` after it ends.
    pub fn job(&self) -> Value {
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": { "name": self.name, "namespace": self.namespace, "labels": self.labels() },
            "spec": {
                "completionMode": "Indexed",
                "completions": self.count,
                "parallelism": self.count,
                "backoffLimitPerIndex": 0,
                "podFailurePolicy": { "rules": [
                    { "action": "FailIndex",
                      "onExitCodes": { "containerName": CONTAINER, "operator": "NotIn", "values": [0] } },
                    { "action": "FailIndex",
                      "onPodConditions": [ { "type": "DisruptionTarget", "status": "True" } ] }
                ] },
                "suspend": true,
                "ttlSecondsAfterFinished": TTL_SECONDS,
                "template": self.pod_template()
            }
        })
    }

    /// The Job's pod: never restarted, no service account token, one gun a node, run as the
    /// image's user, its Secret and a scratch `/tmp` mounted.
    fn pod_template(&self) -> Value {
        json!({
            "metadata": { "labels": self.labels() },
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": false,
                "enableServiceLinks": false,
                "terminationGracePeriodSeconds": 30,
                "affinity": { "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [ {
                        "labelSelector": { "matchLabels": { "showdown.dev/guns": self.name } },
                        "topologyKey": "kubernetes.io/hostname"
                    } ]
                } },
                "securityContext": {
                    "runAsNonRoot": true,
                    "runAsUser": USER,
                    "runAsGroup": USER,
                    "fsGroup": USER,
                    "seccompProfile": { "type": "RuntimeDefault" }
                },
                "containers": [ self.container() ],
                "volumes": [
                    { "name": "dial", "secret": { "secretName": self.secret(), "defaultMode": 0o440 } },
                    { "name": "tmp", "emptyDir": {} }
                ]
            }
        })
    }

    /// The gun's container: `loadgen gun --dial`, its requests its limits (whole CPUs), its
    /// root filesystem read-only and every capability dropped.
    fn container(&self) -> Value {
        let resources = json!({ "cpu": self.cpus.to_string(), "memory": self.memory });
        json!({
            "name": CONTAINER,
            "image": self.image,
            "imagePullPolicy": "IfNotPresent",
            "command": [LOADGEN],
            "args": ["gun", "--dial", self.advertise, "--secrets", SECRETS_DIR],
            "workingDir": "/tmp",
            "env": [
                { "name": "NODE_NAME",
                  "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } },
                { "name": "POD_NAME",
                  "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } }
            ],
            "resources": { "requests": resources, "limits": resources },
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "capabilities": { "drop": ["ALL"] }
            },
            "volumeMounts": [
                { "name": "dial", "mountPath": SECRETS_DIR, "readOnly": true },
                { "name": "tmp", "mountPath": "/tmp" }
            ]
        })
    }

    /// The Secret the pods dial with: this sitting's token and the fingerprint of the
    /// certificate the runner listens with. With `owner`, the uid of the Job applied, the
    /// Secret is the Job's dependent: Kubernetes removes it with the Job (its
    /// `ttlSecondsAfterFinished`, or the next sitting's delete), so no token is left behind.
    pub fn secret_object(&self, token: &str, fingerprint: &str, owner: Option<&str>) -> Value {
        let mut metadata =
            json!({ "name": self.secret(), "namespace": self.namespace, "labels": self.labels() });
        if let (Some(uid), Some(m)) = (owner, metadata.as_object_mut()) {
            m.insert(
                "ownerReferences".into(),
                json!([{ "apiVersion": "batch/v1", "kind": "Job", "name": self.name, "uid": uid }]),
            );
        }
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata,
            "type": "Opaque",
            "stringData": { "token": token, "fingerprint": fingerprint }
        })
    }
}

/// Objects as one YAML stream: each a JSON document (JSON is YAML), `---` between them.
pub fn yaml(objects: &[Value]) -> String {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        out.push_str(&serde_json::to_string_pretty(object).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// Whether `name` is a name Kubernetes takes for a Job (a DNS-1123 label, short enough for
/// its pods' names: 63 less the index and the random suffix).
pub fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 40
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes.last().is_some_and(|b| *b != b'-')
}

/// Whether `memory` is a Kubernetes quantity of bytes (`512Mi`, `1Gi`, `2G`, `1000000`).
pub fn valid_memory(memory: &str) -> bool {
    let digits = memory.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = memory.strip_prefix(digits).unwrap_or(memory);
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && ["", "Ki", "Mi", "Gi", "Ti", "k", "M", "G", "T"].contains(&suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> JobSpec {
        JobSpec {
            name: "showdown-guns".into(),
            namespace: "load".into(),
            count: 3,
            image: "ghcr.io/me/loadgen:1".into(),
            advertise: "10.0.0.5:7411".into(),
            cpus: 2,
            memory: "1Gi".into(),
        }
    }

    #[test]
    fn the_job_is_indexed_suspended_guaranteed_and_fails_an_index_on_the_guns_own_exit() {
        let job = spec().job();
        let s = &job["spec"];
        assert_eq!(s["completionMode"], "Indexed");
        assert_eq!(
            (s["completions"].clone(), s["parallelism"].clone()),
            (json!(3), json!(3))
        );
        assert_eq!(s["backoffLimitPerIndex"], 0);
        assert_eq!(s["suspend"], true);
        let rule = &s["podFailurePolicy"]["rules"][0];
        assert_eq!(rule["action"], "FailIndex");
        assert_eq!(rule["onExitCodes"]["containerName"], CONTAINER);
        let pod = &s["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        let c = &pod["containers"][0];
        assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
        assert_eq!(c["resources"]["limits"]["cpu"], "2");
        assert_eq!(
            c["args"],
            json!(["gun", "--dial", "10.0.0.5:7411", "--secrets", SECRETS_DIR])
        );
        // Nothing secret in the Job: the token is the Secret's alone.
        let text = yaml(std::slice::from_ref(&job));
        let secret = yaml(&[spec().secret_object("tok3n", "AB:CD", None)]);
        assert!(!text.contains("tok3n") && secret.contains("tok3n"));
        assert_eq!(
            pod["volumes"][0]["secret"]["secretName"],
            "showdown-guns-dial"
        );
    }

    /// The Job runs the image the repository's Dockerfile builds: its loadgen where
    /// scripts/static-build.sh puts it in the root the Dockerfile copies, as the user it makes.
    /// (scripts/tests/test_image.py runs the pods from that root.)
    #[test]
    fn the_job_runs_the_images_loadgen_as_its_user() {
        let read = |path: &str| {
            std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
        };
        let dockerfile = read("Dockerfile");
        let script = read("scripts/static-build.sh");
        assert!(
            dockerfile
                .lines()
                .any(|l| l == "COPY --from=build /image/ /"),
            "{dockerfile}"
        );
        let (dir, name) = LOADGEN.rsplit_once('/').unwrap();
        assert_eq!(name, "loadgen");
        assert!(script.contains(&format!("\"$out{dir}/$bin\"")), "{script}");
        assert!(
            dockerfile
                .lines()
                .any(|l| l == format!("USER {USER}:{USER}")),
            "{dockerfile}"
        );
        assert!(script.contains(&format!("user={USER}\n")), "{script}");
    }

    #[test]
    fn names_and_memory_are_what_kubernetes_takes() {
        assert!(valid_name("showdown-guns") && valid_name("g1"));
        assert!(!valid_name("Guns") && !valid_name("-g") && !valid_name("g-") && !valid_name(""));
        assert!(valid_memory("1Gi") && valid_memory("512Mi") && valid_memory("1000000"));
        assert!(!valid_memory("1.5Gi") && !valid_memory("Gi") && !valid_memory("1GB"));
    }

    /// The Job and the Secret as rendered, checked by a maintained validator
    /// (`kubernetes-validate`, strict: no field the schema does not know) against the OpenAPI
    /// schemas of the last three minor versions of Kubernetes it carries.
    #[test]
    fn the_rendered_objects_validate_against_the_last_three_kubernetes_schemas() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("guns.yaml");
        let objects = [
            spec().secret_object(
                "tok3n",
                "AB:CD",
                Some("0f6d3c1e-7a1b-4f0e-9d1c-2b3a4c5d6e7f"),
            ),
            spec().job(),
        ];
        std::fs::write(&path, yaml(&objects)).unwrap();
        for version in VALIDATED {
            let out = std::process::Command::new("kubernetes-validate")
                .args(["--strict", "--no-warn", "-k", version])
                .arg(&path)
                .output()
                .expect("kubernetes-validate (pip install kubernetes-validate; scripts/test.sh installs it)");
            let said = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "Kubernetes {version}: {said}");
            assert_eq!(
                said.matches("passed for resource").count(),
                2,
                "Kubernetes {version}: {said}"
            );
        }
    }
}
