"""Checks of the lab's Terraform without the cloud (no credentials, no provider download): the
HCL parsed with python-hcl2 and held to the lab's invariants, the cloud-init user data rendered
and checked by `cloud-init schema`, the bootstrap function's layer built by bootstrap.tf's own
command (pip, from PyPI: the one step that needs the network) and checked, the proxy's Squid
configuration run by Squid, and the database bootstrap function, with that layer, run against a
local PostgreSQL (those two as root, when Squid and PostgreSQL are installed; skipped otherwise).

    python3 -m pytest terraform/tests
"""

import base64
import glob
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile

import hcl2
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = os.path.dirname(HERE)
README = os.path.join(os.path.dirname(LAB), "docs", "lab.md")
REQUIREMENTS = os.path.join(LAB, "functions", "requirements.txt")


def plain(value):
    """python-hcl2 8 wraps every attribute's value in a one-element list (`count = 2` reads as
    `[2]`, `actions = ["x"]` as `[["x"]]`) while blocks are lists of dicts: unwrap the one level
    so that the checks below read the HCL as written."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) == 1 and not isinstance(value[0], dict):
            return plain_inner(value[0])
        return [plain(v) for v in value]
    return value


def plain_inner(value):
    """An attribute's own value: lists stay lists."""
    if isinstance(value, list):
        return [plain_inner(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def load():
    """Every block of every .tf file, merged: {block type: [block, ...]}."""
    merged = {}
    for path in sorted(glob.glob(os.path.join(LAB, "*.tf"))):
        with open(path) as f:
            parsed = hcl2.load(f)
        for kind, blocks in parsed.items():
            merged.setdefault(kind, []).extend(plain(blocks))
    return merged


TF = load()


def resources(kind):
    """{name: attributes} of every resource of `kind`."""
    out = {}
    for block in TF.get("resource", []):
        for k, named in block.items():
            if k == kind:
                out.update(named)
    return out


def text(value):
    """An attribute as HCL text (python-hcl2 writes references as "${…}")."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return str(value)


def data_sources(kind):
    """{name: attributes} of every data source of `kind`."""
    out = {}
    for block in TF.get("data", []):
        for k, named in block.items():
            if k == kind:
                out.update(named)
    return out


def local(name):
    return next(b[name] for b in TF["locals"] if name in b)


def variable(name):
    return next(b[name] for b in TF["variable"] if name in b)


def test_no_registry_modules():
    assert "module" not in TF, "plain resources only: terraform init could not fetch modules offline"


def test_every_variable_has_a_type_and_a_description():
    for block in TF["variable"]:
        for name, attrs in block.items():
            assert attrs.get("type"), f"variable {name} has no type"
            assert attrs.get("description"), f"variable {name} has no description"


def test_the_operator_cidr_has_no_default_and_refuses_the_world():
    variable = next(b["operator_cidr"] for b in TF["variable"] if "operator_cidr" in b)
    assert "default" not in variable, "SSH must not be opened anywhere by default"
    assert "0.0.0.0/0" in text(variable["validation"]), "the validation refuses 0.0.0.0/0"


def test_ingress_admits_security_groups_and_ssh_from_the_operator_only():
    rules = resources("aws_vpc_security_group_ingress_rule")
    assert rules, "one rule resource per rule"
    for name, r in rules.items():
        if "referenced_security_group_id" in r:
            assert "cidr_ipv4" not in r and "cidr_ipv6" not in r, name
            continue
        assert text(r["cidr_ipv4"]) == "${var.operator_cidr}", f"{name} admits an address range"
        assert (r["from_port"], r["to_port"]) == (22, 22), f"{name}: only SSH comes from the operator"
    # No inline rules that would escape this review.
    for name, sg in resources("aws_security_group").items():
        assert "ingress" not in sg and "egress" not in sg, f"{name} has inline rules"


def test_each_service_is_reached_only_by_who_needs_it():
    rules = resources("aws_vpc_security_group_ingress_rule")
    by_group = {}
    for r in rules.values():
        if "referenced_security_group_id" in r:
            target = text(r["security_group_id"])
            source = text(r["referenced_security_group_id"])
            by_group.setdefault(target, set()).add((source, text(r["from_port"])))
    api, gun, db, proxy, secrets, bootstrap = (
        f"${{aws_security_group.{g}.id}}" for g in ("api", "gun", "db", "proxy", "secrets", "db_bootstrap")
    )
    assert by_group[api] == {(gun, "${var.api_port}"), (gun, "${var.probe_port}")}
    assert by_group[db] == {(api, "5432"), (gun, "5432"), (bootstrap, "5432")}
    assert by_group[proxy] == {(api, "${local.proxy_port}"), (gun, "${local.proxy_port}")}
    assert by_group[secrets] == {(api, "443"), (gun, "443"), (bootstrap, "443")}
    assert gun not in by_group, "nothing reaches into a gun but the operator's SSH"
    assert bootstrap not in by_group, "nothing reaches into the bootstrap function"


def test_no_egress_to_the_internet_but_the_proxys_and_on_80_and_443_only():
    """The issue: egress on 80/443 was open to the world from every host by default. Now the API
    host, the guns and the bootstrap function reach security groups only (the proxy, the
    database, the Secrets Manager endpoint); the proxy alone reaches address ranges."""
    proxy = "${aws_security_group.proxy.id}"
    ranges = {}
    for name, r in resources("aws_vpc_security_group_egress_rule").items():
        if "referenced_security_group_id" in r:
            assert "cidr_ipv4" not in r and "cidr_ipv6" not in r and "prefix_list_id" not in r, name
            continue
        assert text(r["security_group_id"]) == proxy, f"{name}: only the proxy reaches the internet"
        ranges[name] = (text(r["cidr_ipv4"]), r["from_port"], r["to_port"])
    assert sorted(ranges.values()) == [("0.0.0.0/0", 80, 80), ("0.0.0.0/0", 443, 443)]
    cidr_variables = [n for b in TF["variable"] for n in b if "cidr" in n]
    assert sorted(cidr_variables) == ["operator_cidr", "vpc_cidr"], "no variable opens an egress range"
    # The hosts' egress, by group: each names where it goes.
    egress = {}
    for r in resources("aws_vpc_security_group_egress_rule").values():
        if "referenced_security_group_id" in r:
            egress.setdefault(text(r["security_group_id"]), set()).add(
                text(r["referenced_security_group_id"]).split(".")[1]
            )
    assert egress["${aws_security_group.api.id}"] == {"db", "proxy", "secrets"}
    assert egress["${aws_security_group.gun.id}"] == {"api", "db", "proxy", "secrets"}
    assert egress["${aws_security_group.db_bootstrap.id}"] == {"db", "secrets"}
    # The proxy, the one host with a way out, has no role: no credentials on it to carry out.
    (proxy_host,) = [i for n, i in resources("aws_instance").items() if n == "proxy"]
    assert "iam_instance_profile" not in proxy_host


def test_the_database_is_private_encrypted_and_its_password_managed_by_aws():
    (db,) = resources("aws_db_instance").values()
    assert db["publicly_accessible"] is False
    assert db["storage_encrypted"] is True
    assert db["manage_master_user_password"] is True
    assert "password" not in db, "the master password is never written into the state"
    assert db["deletion_protection"] is False, "a lab must be destroyable"
    (group,) = resources("aws_db_subnet_group").values()
    assert "aws_subnet.private" in text(group["subnet_ids"])


def test_the_private_subnets_have_no_route_out():
    associations = resources("aws_route_table_association")
    for a in associations.values():
        assert "aws_subnet.private" not in text(a["subnet_id"])
    for s in resources("aws_subnet").values():
        assert s.get("map_public_ip_on_launch", False) is False


def test_hosts_require_imdsv2_and_encrypted_disks():
    for name, i in resources("aws_instance").items():
        metadata = i["metadata_options"][0] if isinstance(i["metadata_options"], list) else i["metadata_options"]
        assert metadata["http_tokens"] == "required", name
        root = i["root_block_device"][0] if isinstance(i["root_block_device"], list) else i["root_block_device"]
        assert root["encrypted"] is True, name


def secret_reads(document):
    """{resource reference} a policy document lets its holder read, checking that it only reads."""
    doc = data_sources("aws_iam_policy_document")[document]
    names = set()
    for statement in doc["statement"]:
        assert statement["actions"] == ["secretsmanager:GetSecretValue"], document
        assert statement.get("effect", "Allow") == "Allow"
        for arn in statement["resources"]:
            assert "*" not in arn, f"{document} names secrets by pattern: {arn}"
            names.add(arn.removeprefix("${").removesuffix("}"))
    return names


MASTER = "aws_db_instance.lab.master_user_secret[0].secret_arn"


def test_each_host_role_reads_its_own_secrets_only():
    assert secret_reads("api_secrets") == {
        "aws_secretsmanager_secret.probe_token.arn",
        "aws_secretsmanager_secret.probe_tls_key.arn",
        "aws_secretsmanager_secret.db_targets.arn",
    }
    # A gun gets the probe's certificate in its user data, never the key: it cannot impersonate the probe.
    assert secret_reads("gun_secrets") == {
        "aws_secretsmanager_secret.probe_token.arn",
        "aws_secretsmanager_secret.db_runs.arn",
    }
    policies = resources("aws_iam_role_policy")
    assert text(policies["api_secrets"]["role"]) == "${aws_iam_role.api.id}"
    assert text(policies["api_secrets"]["policy"]) == "${data.aws_iam_policy_document.api_secrets.json}"
    assert text(policies["gun_secrets"]["role"]) == "${aws_iam_role.gun.id}"
    assert text(policies["gun_secrets"]["policy"]) == "${data.aws_iam_policy_document.gun_secrets.json}"
    # Each role has that one policy and nothing attached.
    for role in ("api", "gun"):
        held = [n for n, p in policies.items() if text(p["role"]) == f"${{aws_iam_role.{role}.id}}"]
        assert held == [f"{role}_secrets"], held
        assert not [
            a
            for a in resources("aws_iam_role_policy_attachment").values()
            if f"aws_iam_role.{role}." in text(a["role"])
        ]
    profiles = resources("aws_iam_instance_profile")
    assert text(profiles["api"]["role"]) == "${aws_iam_role.api.name}"
    assert text(profiles["gun"]["role"]) == "${aws_iam_role.gun.name}"
    instances = resources("aws_instance")
    assert text(instances["api"]["iam_instance_profile"]) == "${aws_iam_instance_profile.api.name}"
    assert text(instances["gun"]["iam_instance_profile"]) == "${aws_iam_instance_profile.gun.name}"


def test_no_host_reads_the_master_secret_only_the_bootstrap_function():
    for document in ("api_secrets", "gun_secrets"):
        assert MASTER not in secret_reads(document)
    assert secret_reads("db_bootstrap_secrets") == {
        MASTER,
        "aws_secretsmanager_secret.db_targets.arn",
        "aws_secretsmanager_secret.db_runs.arn",
    }
    assert text(resources("aws_iam_role_policy")["db_bootstrap_secrets"]["role"]) == "${aws_iam_role.db_bootstrap.id}"
    assume = data_sources("aws_iam_policy_document")["lambda_assume"]["statement"][0]["principals"][0]
    assert assume["identifiers"] == ["lambda.amazonaws.com"], "the bootstrap role is a function's, not a host's"
    # Nowhere else: not in a policy but the function's and the endpoint's, not in user data.
    for name, doc in data_sources("aws_iam_policy_document").items():
        if name not in ("db_bootstrap_secrets", "secrets_endpoint"):
            assert "master_user_secret" not in str(doc), name
    for name, i in resources("aws_instance").items():
        assert "master_user_secret" not in str(i), name
    for template in ("api.yaml.tftpl", "gun.yaml.tftpl", "install.sh.tftpl"):
        with open(os.path.join(LAB, "templates", template)) as f:
            assert "master" not in f.read().lower(), template


def test_the_secrets_endpoint_admits_the_labs_secrets_only():
    (endpoint,) = resources("aws_vpc_endpoint").values()
    assert endpoint["vpc_endpoint_type"] == "Interface" and endpoint["private_dns_enabled"] is True
    assert "aws_subnet.private" in text(endpoint["subnet_ids"])
    assert secret_reads("secrets_endpoint") == secret_reads("api_secrets") | secret_reads("gun_secrets") | secret_reads(
        "db_bootstrap_secrets"
    )


def test_two_database_roles_each_with_its_own_credentials():
    roles = local("db_roles")
    roles = roles[0] if isinstance(roles, list) else roles
    assert {k: (v["username"], v["dbname"]) for k, v in roles.items()} == {
        "targets": ("showdown", "showdown"),
        "runs": ("runs", "showdown_runs"),
    }
    assert roles["targets"]["password"] == "${random_password.db_targets.result}"
    assert roles["runs"]["password"] == "${random_password.db_runs.result}"
    passwords = resources("random_password")
    assert passwords["db_targets"]["length"] >= 32 and passwords["db_runs"]["length"] >= 32
    versions = resources("aws_secretsmanager_secret_version")
    assert text(versions["db_targets"]["secret_id"]) == "${aws_secretsmanager_secret.db_targets.id}"
    assert text(versions["db_targets"]["secret_string"]) == "${jsonencode(local.db_roles.targets)}"
    assert text(versions["db_runs"]["secret_id"]) == "${aws_secretsmanager_secret.db_runs.id}"
    assert text(versions["db_runs"]["secret_string"]) == "${jsonencode(local.db_roles.runs)}"
    # The master user is neither role, and makes no database of its own for the targets.
    (db,) = resources("aws_db_instance").values()
    assert db["username"] not in ("showdown", "runs")
    assert "db_name" not in db, "the bootstrap makes both databases, each owned by its role"
    # The hosts are told which secret, and so which role, is theirs.
    instances = resources("aws_instance")
    assert "aws_secretsmanager_secret.db_targets.arn" in text(instances["api"]["user_data"])
    assert "aws_secretsmanager_secret.db_runs" not in text(instances["api"]["user_data"])
    assert "aws_secretsmanager_secret.db_runs.arn" in text(instances["gun"]["user_data"])
    assert "aws_secretsmanager_secret.db_targets" not in text(instances["gun"]["user_data"])


def test_the_bootstrap_function_runs_in_the_private_subnets_on_each_password():
    (function,) = resources("aws_lambda_function").values()
    vpc = function["vpc_config"][0] if isinstance(function["vpc_config"], list) else function["vpc_config"]
    assert "aws_subnet.private" in text(vpc["subnet_ids"])
    assert text(vpc["security_group_ids"]) == "${aws_security_group.db_bootstrap.id}"
    assert text(function["role"]) == "${aws_iam_role.db_bootstrap.arn}"
    assert function["handler"] == "db_bootstrap.handler"
    (invocation,) = resources("aws_lambda_invocation").values()
    for needed in (MASTER, "aws_secretsmanager_secret.db_targets.arn", "aws_secretsmanager_secret.db_runs.arn"):
        assert needed in text(invocation["input"])
    triggers = str(invocation["triggers"])
    assert "db_targets.version_id" in triggers and "db_runs.version_id" in triggers
    for host in ("api", "gun"):
        assert "${aws_lambda_invocation.db_bootstrap}" in resources("aws_instance")[host]["depends_on"], host
    # Its package trusts the RDS CA bundle checked against the pinned digest.
    (bundle,) = data_sources("http").keys()
    condition = str(function["lifecycle"])
    assert f"sha256(data.http.{bundle}.response_body) == var.rds_ca_bundle_sha256" in condition
    assert "data.http.rds_ca_bundle.response_body" in str(data_sources("archive_file")["db_bootstrap"])
    # Its driver comes in its layer; a new layer invokes it again.
    assert function["layers"] == ["${aws_lambda_layer_version.db_bootstrap.arn}"]
    assert "aws_lambda_layer_version.db_bootstrap.arn" in triggers


def requirement_lines():
    """requirements.txt's requirements, each with its continuation lines joined, no comments."""
    with open(REQUIREMENTS) as f:
        joined = re.sub(r"\\\n\s*", " ", f.read())
    lines = [" ".join(line.split("#")[0].split()) for line in joined.splitlines()]
    return [line for line in lines if line]


def test_the_layer_is_pinned_by_hash_and_installed_with_require_hashes():
    """The function's layer is PyPI's wheels, each pinned to its SHA-256 in requirements.txt, and
    pip installs it refusing anything else: another file, a package not pinned, an sdist (whose
    build would run code), a wheel for some platform, or wheels for the operator's Python rather
    than the runtime's."""
    pins = {}
    for line in requirement_lines():
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.]*)((?: --hash=sha256:[0-9a-f]{64})+)", line)
        assert m, f"requirements.txt: not a name==version pinned by hash: {line!r}"
        pins[m.group(1).lower()] = m.group(2)
    assert {"pg8000", "scramp"} <= set(pins), pins
    command = layer_build_command()
    (install,) = [line for line in command.splitlines() if "pip install" in line]
    for flag in ("--require-hashes", "--no-deps", "--only-binary=:all:", "--no-compile", "--implementation py", "--abi none", "--platform any"):
        assert f" {flag} " in install, flag
    assert re.search(r" -r \"\$REQUIREMENTS\"$", install)
    assert not re.search(r"--(index-url|extra-index-url|find-links|trusted-host|no-binary)|\s-[if]\s", install)
    # Wheels for the function's runtime.
    (function,) = resources("aws_lambda_function").values()
    assert function["runtime"] == "python${local.db_bootstrap_python}"
    assert f" --python-version {local('db_bootstrap_python')} " in install
    # Rebuilt when the pins change; the layer is the zip built.
    (build,) = resources("terraform_data").values()
    assert 'filesha256("${path.module}/functions/requirements.txt")' in str(build["triggers_replace"])
    (provisioner,) = build["provisioner"]
    environment = provisioner["local-exec"]["environment"][0]
    assert provisioner["local-exec"]["command"] == "${local.db_bootstrap_layer_build}"
    assert environment == {"REQUIREMENTS": "${path.module}/functions/requirements.txt", "LAYER_ZIP": "${self.input}"}
    (layer,) = resources("aws_lambda_layer_version").values()
    assert layer["filename"] == "${terraform_data.db_bootstrap_layer.output}"
    assert "filebase64sha256(terraform_data.db_bootstrap_layer.output)" in layer["source_code_hash"]
    assert "fileexists(terraform_data.db_bootstrap_layer.output)" in str(layer["lifecycle"])
    assert layer["compatible_runtimes"] == [function["runtime"]]


def layer_build_command():
    """bootstrap.tf's build of the layer, as the shell gets it (REQUIREMENTS and LAYER_ZIP from
    the environment)."""
    command = text(local("db_bootstrap_layer_build")).replace("${local.db_bootstrap_python}", local("db_bootstrap_python"))
    assert "${" not in command, command
    return command


@pytest.fixture(scope="module")
def layer(tmp_path_factory):
    """The function's layer, built by bootstrap.tf's own command (pip, from PyPI, each wheel
    checked against its pin) and unpacked as the runtime unpacks it: {"zip", "python": the
    directory the runtime puts on sys.path}."""
    d = tmp_path_factory.mktemp("layer")
    built = subprocess.run(
        ["sh", "-c", layer_build_command()],
        env={**os.environ, "REQUIREMENTS": REQUIREMENTS, "LAYER_ZIP": str(d / "layer.zip")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    with zipfile.ZipFile(d / "layer.zip") as z:
        z.extractall(d / "opt")
    return {"zip": str(d / "layer.zip"), "python": str(d / "opt" / "python")}


def test_the_layer_holds_the_pinned_wheels_and_all_they_need(layer):
    from importlib.metadata import distributions

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    with zipfile.ZipFile(layer["zip"]) as z:
        for info in z.infolist():
            assert info.filename.startswith("python/"), info.filename
            assert not info.filename.endswith(".pyc"), info.filename
            assert (info.external_attr >> 16) & 0o444 == 0o444, f"{info.filename} is not readable by the runtime"
    installed = {canonicalize_name(d.metadata["Name"]): d for d in distributions(path=[layer["python"]])}
    pins = {canonicalize_name(line.split("==")[0]): line.split("==")[1].split()[0] for line in requirement_lines()}
    assert {name: d.version for name, d in installed.items()} == pins
    # The runtime's Python, on Linux: every dependency of every package is in the layer.
    runtime = {
        "python_version": local("db_bootstrap_python"),
        "python_full_version": local("db_bootstrap_python") + ".0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    for name, dist in installed.items():
        for requirement in map(Requirement, dist.requires or []):
            if requirement.marker and not requirement.marker.evaluate(runtime):
                continue
            needed = canonicalize_name(requirement.name)
            assert needed in installed, f"{name} needs {requirement}, not in requirements.txt"
            assert requirement.specifier.contains(installed[needed].version, prereleases=True), f"{name} needs {requirement}"
        # Pure Python, whatever the machine.
        wheel = dist.read_text("WHEEL")
        assert "Root-Is-Purelib: true" in wheel, name
        assert all(tag.endswith("-none-any") for tag in re.findall(r"^Tag: (\S+)$", wheel, re.M)), name


def test_no_output_carries_a_secret():
    for block in TF["output"]:
        for name, attrs in block.items():
            value = text(attrs["value"])
            for secret in ("random_password", "private_key", "probe_token", "secret_string"):
                assert secret not in value, f"output {name} exposes {secret}"


def render(template, values):
    """Renders a .tftpl the way templatefile() does, for the forms the lab's templates use:
    ${name} and $${ (a literal ${)."""
    with open(os.path.join(LAB, "templates", template)) as f:
        source = f.read()
    rendered = re.sub(r"(?<!\$)\$\{([a-z_0-9]+)\}", lambda m: str(values[m.group(1)]), source)
    return rendered.replace("$${", "${")


SHA = "0" * 63 + "1"


def egress_domains(repository="https://github.com/YOU/showdown.git"):
    """local.egress_domains as Terraform computes it, for the repository docs/lab.md names."""
    expression = text(local("egress_domains"))
    names = re.findall(r"'(\.?[a-z0-9][a-z0-9.-]*\.[a-z]+)'", expression)
    assert 'regex("^https://([^/:@]+)/",var.showdown_repository)[0]' in expression
    return names + [re.match(r"^https://([^/:@]+)/", repository).group(1)]


def user_data():
    install = render(
        "install.sh.tftpl",
        {"repository": "https://example.invalid/showdown.git", "revision": "main", "rds_ca_bundle_sha256": SHA},
    )
    common = {
        "region": "us-east-1",
        "db_host": "lab-db.example.internal",
        "probe_token_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:showdown/probe-token",
        "probe_certificate_b64": base64.b64encode(
            b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
        ).decode(),
        "install_script_b64": base64.b64encode(install.encode()).decode(),
        "proxy_address": "10.42.0.20",
        "proxy_port": 3128,
        "api_port": 8080,
        "probe_port": 7700,
    }
    return {
        "api": render(
            "api.yaml.tftpl",
            dict(
                common,
                db_secret_arn="arn:aws:secretsmanager:us-east-1:123456789012:secret:showdown/db-targets",
                probe_tls_key_arn="arn:aws:secretsmanager:us-east-1:123456789012:secret:showdown/probe-tls-key",
                target="go",
            ),
        ),
        "gun": render(
            "gun.yaml.tftpl",
            dict(
                common,
                db_secret_arn="arn:aws:secretsmanager:us-east-1:123456789012:secret:showdown/db-runs",
                api_address="10.42.0.10",
                gun_index=0,
                gun_count=2,
            ),
        ),
        "proxy": render(
            "proxy.yaml.tftpl", {"vpc_cidr": "10.42.0.0/16", "proxy_port": 3128, "domains": " ".join(egress_domains())}
        ),
        "install": install,
    }


@pytest.mark.parametrize("host", ["api", "gun", "proxy"])
def test_rendered_user_data_passes_cloud_init_schema(host):
    data = user_data()[host]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(data)
        f.flush()
        checked = subprocess.run(
            ["cloud-init", "schema", "--config-file", f.name, "--annotate"],
            capture_output=True,
            text=True,
        )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_user_data_holds_no_secret_and_the_scripts_parse():
    data = user_data()
    for host in ("api", "gun", "proxy"):
        assert "PGPASSWORD=" not in data[host].split("export PGPASSWORD=$(")[0]
        assert "BEGIN PRIVATE KEY" not in data[host]
        # EC2 takes 16 KiB of user data at most.
        assert len(data[host].encode()) < 16384, f"{host}: {len(data[host].encode())} bytes"
    with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
        f.write(data["install"])
        f.flush()
        assert subprocess.run(["bash", "-n", f.name]).returncode == 0
    assert "probe_tls_key" not in data["gun"].lower() and "PROBE_TLS_KEY" not in data["gun"]


def shell_lines(script):
    """The script's commands, one per line, with continuations joined and comments left out."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_every_download_is_checked_against_a_pinned_sha256():
    """Each curl or wget writes a file that the next command checks with `sha256sum -c` against
    a digest pinned in the script or given by a variable (rendered here as SHA)."""
    data = user_data()
    scripts = {"install": data["install"]}
    for host in ("api", "gun", "proxy"):
        scripts[host] = data[host]
    downloads = 0
    for name, script in scripts.items():
        lines = shell_lines(script)
        pins = dict(re.findall(r"^([a-z_0-9]+)=([0-9a-f]{64})$", script, re.M))
        for i, line in enumerate(lines):
            if not re.search(r"(^|[;&|(]\s*)(curl|wget)\s", line):
                continue
            downloads += 1
            out = re.search(r"\s(?:-o|-O|--output)\s+(\S+)", line)
            assert out, f"{name}: a download that writes no file: {line}"
            check = lines[i + 1] if i + 1 < len(lines) else ""
            m = re.fullmatch(r'echo "\$([a-z_0-9]+)  (\S+)" \| sha256sum -c --quiet -', check)
            assert m, f"{name}: {line!r} is not followed by its sha256sum check, but by {check!r}"
            assert m.group(2) == out.group(
                1
            ), f"{name}: the check reads {m.group(2)}, the download writes {out.group(1)}"
            assert m.group(1) in pins, f"{name}: ${m.group(1)} is not a pinned SHA-256"
    assert downloads == 4, "the RDS CA bundle, Node.js, Go and rustup"
    assert SHA in data["install"], "the RDS CA bundle's digest comes from var.rds_ca_bundle_sha256"
    assert re.fullmatch(r"[0-9a-f]{64}", variable("rds_ca_bundle_sha256")["default"])
    # The package lists come through apt (signed) once the proxy answers, not from cloud-init.
    for host in ("api", "gun"):
        assert "packages:" not in data[host] and "package_update" not in data[host], host


def test_the_proxy_allows_the_names_the_setup_fetches_from_and_nothing_else():
    conf = user_data()["proxy"]
    squid = [line.strip() for line in conf.split("content: |", 1)[1].splitlines() if line.strip()]
    assert squid == [
        "acl lab_hosts src 10.42.0.0/16",
        "acl lab_ports port 80 443",
        "acl lab_sources dstdomain -n " + " ".join(egress_domains()),
        "http_access deny !lab_ports",
        "http_access allow lab_hosts lab_sources",
        "http_access deny all",
    ]
    allowed = egress_domains()

    def allows(host):
        return any(host == d or (d.startswith(".") and (host.endswith(d) or host == d[1:])) for d in allowed)

    # Every host the setup fetches from is allowed, and the default repository's.
    hosts = set(re.findall(r"https?://([a-z0-9.-]+)", user_data()["install"])) - {"example.invalid"}
    assert hosts and all(allows(h) for h in hosts), [h for h in hosts if not allows(h)]
    for needed in ("cdn-aws.deb.debian.org", "github.com", "index.crates.io", "registry.npmjs.org", "proxy.golang.org"):
        assert allows(needed), needed
    assert not allows("example.com") and not allows("amazonaws.com")
    assert conf.count("http_access allow") == 1


def find_bin(name):
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("squid"), reason="needs root and Squid")
def test_squid_refuses_every_name_but_the_allowed_ones():
    """The rendered rules, run by Squid behind Debian's own denials: a name not allowed, an
    address given as a number and a port but 80 and 443 are refused (403); an allowed name is
    let through (whatever the network then does with it)."""
    rules = user_data()["proxy"].split("content: |", 1)[1].replace("10.42.0.0/16", "127.0.0.1/32")
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        with open(f"{d}/lab.conf", "w") as f:
            f.write(rules)
        with open(f"{d}/squid.conf", "w") as f:
            f.write(
                f"http_port 127.0.0.1:{port}\npid_filename none\naccess_log stdio:{d}/access.log\n"
                f"cache_log {d}/cache.log\ncache_effective_user proxy\nshutdown_lifetime 0 seconds\n"
                "acl SSL_ports port 443\nacl Safe_ports port 80\nacl Safe_ports port 443\n"
                "http_access deny !Safe_ports\nhttp_access deny CONNECT !SSL_ports\n"
                f"include {d}/lab.conf\nhttp_access allow localhost\nhttp_access deny all\n"
            )
        for log in ("access.log", "cache.log"):
            open(f"{d}/{log}", "w").close()
            shutil.chown(f"{d}/{log}", "proxy")
        squid = subprocess.Popen(
            ["squid", "-N", "-f", f"{d}/squid.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 15
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, "squid did not start"
                    time.sleep(0.2)

            def status(url):
                """The proxy's answer to the CONNECT for url."""
                out = subprocess.run(
                    [
                        "curl",
                        "-s",
                        "-o",
                        "/dev/null",
                        "-w",
                        "%{http_connect}",
                        "--max-time",
                        "10",
                        "-x",
                        f"http://127.0.0.1:{port}",
                        url,
                    ],
                    capture_output=True,
                    text=True,
                )
                return out.stdout

            assert status("https://example.com/") == "403"
            assert status("https://203.0.113.7/") == "403"
            assert status("https://nodejs.org:8443/") == "403"
            assert status("https://nodejs.org/") not in ("403", "000")
        finally:
            squid.terminate()
            try:
                squid.wait(timeout=15)
            except subprocess.TimeoutExpired:
                squid.kill()
                squid.wait()


def load_bootstrap(layer):
    """functions/db_bootstrap.py as the runtime loads it: with the layer's python/ on sys.path,
    ahead of any pg8000 installed here, so that the pinned versions are the ones exercised."""
    sys.path.insert(0, layer["python"])
    for name in [m for m in sys.modules if m.split(".")[0] in ("pg8000", "scramp", "asn1crypto", "dateutil")]:
        del sys.modules[name]
    spec = importlib.util.spec_from_file_location("db_bootstrap", os.path.join(LAB, "functions", "db_bootstrap.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for package in (module.pg8000, sys.modules["scramp"]):
        assert package.__file__.startswith(layer["python"] + os.sep), package.__file__
    return module


@pytest.mark.skipif(
    os.geteuid() != 0 or not find_bin("initdb") or not find_bin("pg_ctl") or not shutil.which("openssl"),
    reason="needs root (PostgreSQL runs as its own user), PostgreSQL and openssl",
)
def test_the_bootstrap_gives_each_role_its_own_database(layer):
    """functions/db_bootstrap.py, with its layer's pg8000, against a local PostgreSQL made like
    RDS: TLS only, verified by host name and CA; a master user that is no superuser (CREATEROLE,
    CREATEDB, owner of the `postgres` database) logging in with MD5, the roles with SCRAM;
    statements logged as RDS's parameter group logs them (DDL)."""
    bootstrap = load_bootstrap(layer)
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        subprocess.run(
            [
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-days",
                "1",
                "-subj",
                "/CN=localhost",
                "-addext",
                "subjectAltName=DNS:localhost",
                "-keyout",
                f"{d}/server.key",
                "-out",
                f"{d}/ca.pem",
            ],
            check=True,
            capture_output=True,
        )
        for f in (d, f"{d}/server.key"):
            shutil.chown(f, "postgres")
        os.chmod(f"{d}/server.key", 0o600)

        def as_postgres(*args):
            return subprocess.run(
                ["runuser", "-u", "postgres", "--", *args], check=True, capture_output=True, text=True
            ).stdout

        data, port = f"{d}/data", free_port()
        as_postgres(find_bin("initdb"), "-U", "superuser", "-A", "trust", "-D", data)
        with open(f"{data}/postgresql.conf", "a") as f:
            f.write(
                f"listen_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{d}'\n"
                f"ssl = on\nssl_cert_file = '{d}/ca.pem'\nssl_key_file = '{d}/server.key'\nlog_statement = 'ddl'\n"
            )
        with open(f"{data}/pg_hba.conf", "w") as f:
            f.write("local all superuser trust\nhostssl all all 127.0.0.1/32 md5\n")
        as_postgres(find_bin("pg_ctl"), "-D", data, "-l", f"{d}/server.log", "-w", "start")
        try:

            def sql(*statements):
                commands = [arg for statement in statements for arg in ("-c", statement)]
                return as_postgres(
                    find_bin("psql"),
                    "-X",
                    "-At",
                    "-h",
                    d,
                    "-p",
                    str(port),
                    "-U",
                    "superuser",
                    "-d",
                    "postgres",
                    "-v",
                    "ON_ERROR_STOP=1",
                    *commands,
                )

            # The master's own password is the harness's, kept out of the log the test searches.
            sql(
                "SET log_statement = 'none'",
                "SET password_encryption = 'md5'",
                "CREATE ROLE lab_admin LOGIN CREATEROLE CREATEDB PASSWORD 'master-password'",
            )
            sql("ALTER DATABASE postgres OWNER TO lab_admin")
            secrets = {
                "master": {"username": "lab_admin", "password": "master-password"},
                "targets": {"username": "showdown", "password": "TargetsPassword1", "dbname": "showdown"},
                "runs": {"username": "runs", "password": "RunsPassword1", "dbname": "showdown_runs"},
            }
            event = {
                "host": "localhost",
                "port": port,
                "master_secret_arn": "master",
                "role_secret_arns": ["targets", "runs"],
            }
            first = bootstrap.run(event, lambda arn: dict(secrets[arn]), cafile=f"{d}/ca.pem")
            assert [r["role_was"] for r in first["roles"]] == ["created", "created"]
            assert first["public_connects_to_postgres"] is False
            # Again, with a new password for the targets: idempotent, and the old password stops working.
            secrets["targets"]["password"] = "TargetsPassword2"
            again = bootstrap.run(event, lambda arn: dict(secrets[arn]), cafile=f"{d}/ca.pem")
            assert [r["role_was"] for r in again["roles"]] == ["updated", "updated"]

            def connect(user, password, database):
                return bootstrap.connect("localhost", port, user, password, database, f"{d}/ca.pem")

            targets = connect("showdown", "TargetsPassword2", "showdown")
            with open(os.path.join(os.path.dirname(LAB), "targets", "schema.sql")) as f:
                targets.run(f.read())
            targets.run("INSERT INTO users (email, password) VALUES ('a@example.com', 'x')")
            targets.close()
            runs = connect("runs", "RunsPassword1", "showdown_runs")
            runs.run("CREATE TABLE runs (id serial PRIMARY KEY)")
            runs.close()
            refusals = [
                ("showdown", "TargetsPassword1", "showdown", "password authentication failed"),
                ("showdown", "TargetsPassword2", "showdown_runs", "permission denied for database"),
                ("runs", "RunsPassword1", "showdown", "permission denied for database"),
                ("runs", "RunsPassword1", "postgres", "permission denied for database"),
            ]
            for user, password, database, why in refusals:
                with pytest.raises(bootstrap.pg8000.native.DatabaseError, match=why):
                    connect(user, password, database)
            # A failed bootstrap says where, and why, in one line.
            wrong = dict(secrets, master={"username": "lab_admin", "password": "not-the-password"})
            with pytest.raises(
                bootstrap.BootstrapError,
                match=r"^logging in to localhost:\d+/postgres as lab_admin: password authentication failed .*\(SQLSTATE 28P01\)$",
            ):
                bootstrap.run(event, lambda arn: dict(wrong[arn]), cafile=f"{d}/ca.pem")
            assert sql(
                "SELECT rolname, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname IN ('showdown', 'runs') ORDER BY 1"
            ).split() == [
                "runs|f|f|f",
                "showdown|f|f|f",
            ]
            assert sql(
                "SELECT datname, pg_get_userbyid(datdba) FROM pg_database WHERE datname LIKE 'showdown%' ORDER BY 1"
            ).split() == [
                "showdown|showdown",
                "showdown_runs|runs",
            ]
            # The client checks the server's name against its certificate.
            with pytest.raises(ssl_error()):
                bootstrap.connect("127.0.0.1", port, "runs", "RunsPassword1", "showdown_runs", f"{d}/ca.pem")
            with pytest.raises(bootstrap.BootstrapError, match="^logging in to 127.0.0.1:.*CERTIFICATE_VERIFY_FAILED"):
                bootstrap.run(dict(event, host="127.0.0.1"), lambda arn: dict(secrets[arn]), cafile=f"{d}/ca.pem")
        finally:
            as_postgres(find_bin("pg_ctl"), "-D", data, "-m", "fast", "-w", "stop")
        with open(f"{d}/server.log") as f:
            log = f.read()
        assert "CREATE ROLE" in log, "the DDL is logged, as on RDS"
        for password in ("TargetsPassword1", "TargetsPassword2", "RunsPassword1", "master-password"):
            assert password not in log, "a password in clear in the database's log"


def ssl_error():
    import ssl

    return ssl.SSLCertVerificationError


def test_the_probe_certificate_lasts_a_lab_and_an_apply_renews_it():
    (cert,) = resources("tls_self_signed_cert").values()
    assert text(cert["validity_period_hours"]) == "${var.probe_certificate_days * 24}"
    days = variable("probe_certificate_days")
    assert days["default"] >= 365
    floor = int(re.search(r">= (\d+)", text(days["validation"])).group(1))
    renewal = eval(text(cert["early_renewal_hours"]).strip("${}"))  # "30 * 24"
    assert 0 < renewal < floor * 24, "a fresh certificate is never due for renewal at once"
    # The hosts get a renewed certificate by being rebuilt: cloud-init runs at first boot only.
    for name, i in resources("aws_instance").items():
        assert i.get("user_data_replace_on_change") is True, name
    assert "tls_self_signed_cert.probe.validity_end_time" in str(TF["output"])


def readme_lab_section():
    with open(README) as f:
        readme = f.read()
    return readme.split("## Run the lab on AWS\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_claims_what_the_lab_holds():
    section = readme_lab_section()
    # Its table of who reads which secret is the policies'.
    by_name = {
        text(r["name"]).replace("${var.name}/", ""): f"aws_secretsmanager_secret.{n}.arn"
        for n, r in resources("aws_secretsmanager_secret").items()
    }
    readers = {"API host": "api_secrets", "guns": "gun_secrets", "bootstrap function": "db_bootstrap_secrets"}
    rows = [line.strip() for line in section.splitlines() if line.strip().startswith("| ") and "---" not in line]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    assert header == ["secret", *readers]
    seen = set()
    for row in rows[1:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        m = re.match(r"`([a-z-]+)`", cells[0])
        secret = by_name[m.group(1)] if m else MASTER
        assert m or "RDS master" in cells[0], cells[0]
        seen.add(secret)
        for who, cell in zip(readers.values(), cells[1:]):
            assert (cell == "reads") == (secret in secret_reads(who)), f"README: {who} and {cells[0]}"
    assert seen == set(by_name.values()) | {MASTER}, "every secret is in the table"
    # The variables and outputs it names exist.
    variables = {n for b in TF["variable"] for n in b}
    outputs = {n for b in TF["output"] for n in b}
    for name in re.findall(r"-var ([a-z_]+)=", section):
        assert name in variables, name
    for name in re.findall(r"terraform output (?:-raw )?([a-z_]+)", section):
        assert name in outputs, name
    for name in (
        "showdown_revision",
        "extra_egress_domains",
        "rds_ca_bundle_sha256",
        "probe_certificate_days",
        "operator_cidr",
    ):
        assert f"`{name}`" in section and name in variables, name
    assert f"{variable('probe_certificate_days')['default']} by default" in section
    assert (
        "last 30 days" in section
        and text(resources("tls_self_signed_cert")["probe"]["early_renewal_hours"]) == "${30 * 24}"
    )
    for domain in egress_domains():
        if not domain.startswith(".") and domain not in (
            "security.debian.org",
            "index.crates.io",
            "static.crates.io",
            "registry.npmjs.org",
            "sum.golang.org",
            "github.com",
        ):
            assert f"`{domain}`" in section, domain


def test_checkov_finds_nothing_unexplained():
    """Every checkov finding is fixed or skipped in place with the reason (`#checkov:skip=…`)."""
    run = subprocess.run(
        ["checkov", "-d", LAB, "--framework", "terraform", "--quiet", "--compact", "--skip-download", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(run.stdout)
    failed = [f"{c['check_id']} {c['resource']}" for c in report.get("results", {}).get("failed_checks", [])]
    assert not failed, failed
    assert report["summary"]["parsing_errors"] == 0
    assert report["summary"]["passed"] > 100, "checkov read the lab"


def test_the_guns_runner_finds_what_the_lab_makes():
    """`[guns] from = "terraform"` (crates/fleet/src/ssh/lab.rs, docs/guns.md) drives the
    lab's guns from the operator's machine: it reads `ssh_guns` as `ssh USER@IP`, runs `loadgen`
    from the guns' PATH as the SSH user, and gives each gun's shard the store URL in the file the
    lab writes for that user. What it expects is what the lab makes."""
    outputs = {k: v for block in TF["output"] for k, v in block.items()}
    guns = text(outputs["ssh_guns"]["value"])
    assert re.search(r"ssh admin@\$\{g\.public_ip\}", guns), guns
    spec = open(os.path.join(os.path.dirname(LAB), "crates", "fleet", "src", "ssh", "lab.rs")).read()
    store_env = re.search(r'pub const LAB_STORE_ENV: &str = "([^"]+)";', spec).group(1)
    gun = open(os.path.join(LAB, "templates", "gun.yaml.tftpl")).read()
    assert f"> {store_env}" in gun and "SHOWDOWN_DB=postgres://" in gun, "the gun's store file moved"
    assert re.search(rf"chown admin: .*{re.escape(store_env)}", gun), "the store file is not the SSH user's"
    install = open(os.path.join(LAB, "templates", "install.sh.tftpl")).read()
    assert re.search(r"install -m 0755 \S*/loadgen .* /usr/local/bin/", install), "loadgen is not on the guns' PATH"
    rule = resources("aws_vpc_security_group_ingress_rule")["gun_ssh"]
    assert text(rule["cidr_ipv4"]) == "${var.operator_cidr}" and (rule["from_port"], rule["to_port"]) == (22, 22)
    # The runner's checks of the target go through the first gun (an SSH port forward): the
    # guns' sshd is Debian's, with forwarding left at its default (allowed).
    assert "AllowTcpForwarding no" not in gun
