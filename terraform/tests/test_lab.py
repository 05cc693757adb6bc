"""Offline checks of the lab's Terraform (no cloud credentials, no provider download): the HCL
parsed with python-hcl2 and held to the lab's invariants, and the cloud-init user data rendered
and checked by `cloud-init schema`.

    python3 -m pytest terraform/tests
"""

import base64
import glob
import json
import os
import re
import subprocess
import tempfile

import hcl2
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = os.path.dirname(HERE)


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
    api, gun, db = (f"${{aws_security_group.{g}.id}}" for g in ("api", "gun", "db"))
    assert by_group[api] == {(gun, "${var.api_port}"), (gun, "${var.probe_port}")}
    assert by_group[db] == {(api, "5432"), (gun, "5432")}
    assert gun not in by_group, "nothing reaches into a gun but the operator's SSH"


def test_egress_to_address_ranges_is_package_installation_only():
    for name, r in resources("aws_vpc_security_group_egress_rule").items():
        if "referenced_security_group_id" in r:
            continue
        assert text(r["cidr_ipv4"]) == "${each.value}", name
        assert text(r["for_each"]) == "${toset(var.package_egress_cidrs)}", name
        assert (r["from_port"], r["to_port"]) in [(80, 80), (443, 443)], name


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


def test_roles_read_the_labs_two_secrets_and_nothing_else():
    policies = [b for b in TF["data"] if "aws_iam_policy_document" in b]
    docs = {}
    for b in policies:
        docs.update(b["aws_iam_policy_document"])
    statement = docs["read_lab_secrets"]["statement"][0]
    assert statement["actions"] == ["secretsmanager:GetSecretValue"]
    resources_text = text(statement["resources"])
    assert "*" not in resources_text.replace("${", "").replace("}", "").split("[")[0]
    assert "master_user_secret" in resources_text and "aws_secretsmanager_secret.probe.arn" in resources_text
    assert len(statement["resources"]) == 2


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


def user_data():
    install = render(
        "install.sh.tftpl",
        {"repository": "https://example.invalid/showdown.git", "revision": "main"},
    )
    common = {
        "region": "us-east-1",
        "db_host": "lab-db.example.internal",
        "db_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:rds-db",
        "probe_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:showdown/probe",
        "probe_certificate_b64": base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode(),
        "install_script_b64": base64.b64encode(install.encode()).decode(),
        "api_port": 8080,
        "probe_port": 7700,
        "store_database": "showdown_runs",
    }
    return {
        "api": render("api.yaml.tftpl", dict(common, target="go")),
        "gun": render("gun.yaml.tftpl", dict(common, api_address="10.42.0.10", gun_index=0, gun_count=2)),
        "install": install,
    }


@pytest.mark.parametrize("host", ["api", "gun"])
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
    for host in ("api", "gun"):
        assert "PGPASSWORD=" not in data[host].split("export PGPASSWORD=$(")[0]
        assert "BEGIN PRIVATE KEY" not in data[host]
    with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
        f.write(data["install"])
        f.flush()
        assert subprocess.run(["bash", "-n", f.name]).returncode == 0


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
