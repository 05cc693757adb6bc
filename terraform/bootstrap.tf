# The database's roles, made without a host ever holding the master password. Terraform cannot
# reach the private RDS from the operator's machine (nor could the postgresql provider), and a
# host that ran the bootstrap would have to read the master secret. So a Lambda function in the
# private subnets does it (functions/db_bootstrap.py): invoked by Terraform once the database is
# up, it reads the master secret (its role is the only one allowed to) and the two roles'
# secrets through the Secrets Manager endpoint, then creates the role `showdown`, owner of the
# database `showdown`, and the role `runs`, owner of `showdown_runs`, each without CONNECT on
# the other's. It runs again when a role's password, the function, its layer or the database
# changes.

locals {
  # The function's Python: its runtime, and the Python pip chooses the layer's wheels for.
  db_bootstrap_python = "3.12"
  # The layer: pg8000 (the PostgreSQL driver the runtime lacks) and its dependencies, installed
  # by pip on the operator's machine from functions/requirements.txt, which pins each to one
  # wheel by its SHA-256: any other file, or a dependency not pinned there, stops the install.
  # Pure-Python wheels only, chosen for the runtime's Python whatever the operator's; no bytecode
  # compiled by the operator's Python. Then zipped (python3's zipfile) under python/, where the
  # runtime looks, readable by the function's user.
  db_bootstrap_layer_build = <<-EOT
    set -eu
    umask 022
    build=$(mktemp -d)
    trap 'rm -rf "$build"' EXIT
    python3 -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps --only-binary=:all: --no-compile --python-version ${local.db_bootstrap_python} --implementation py --abi none --platform any --target "$build/python" -r "$REQUIREMENTS"
    mkdir -p "$(dirname "$LAYER_ZIP")"
    rm -f "$LAYER_ZIP"
    python3 -m zipfile -c "$LAYER_ZIP" "$build/python"
  EOT
}

# The layer's zip, built into .terraform/ when first applied, and again when the pins, the build
# or the zip's path change. The zip is not in the state: after a new checkout or a cleaned
# .terraform/, the layer's precondition asks for a rebuild.
resource "terraform_data" "db_bootstrap_layer" {
  input = "${path.module}/.terraform/${var.name}-db-bootstrap-layer.zip"
  triggers_replace = {
    requirements = filesha256("${path.module}/functions/requirements.txt")
    build        = local.db_bootstrap_layer_build
    zip          = "${path.module}/.terraform/${var.name}-db-bootstrap-layer.zip"
  }

  provisioner "local-exec" {
    command = local.db_bootstrap_layer_build
    environment = {
      REQUIREMENTS = "${path.module}/functions/requirements.txt"
      LAYER_ZIP    = self.input
    }
  }
}

# Its zip's path is unknown while the zip is being (re)built, so the zip is read once built.
resource "aws_lambda_layer_version" "db_bootstrap" {
  layer_name  = "${var.name}-db-bootstrap-pg8000"
  description = "pg8000 and its dependencies, as pinned in terraform/functions/requirements.txt"
  filename    = terraform_data.db_bootstrap_layer.output
  # null only when the zip is missing: the precondition then stops a plan, and a destroy (whose
  # refresh reads this too) needs no zip.
  source_code_hash    = try(filebase64sha256(terraform_data.db_bootstrap_layer.output), null)
  compatible_runtimes = ["python${local.db_bootstrap_python}"]

  # Checked on every plan but a destroy's: a lab without its zip can still be destroyed.
  lifecycle {
    precondition {
      condition     = fileexists(terraform_data.db_bootstrap_layer.output)
      error_message = "The bootstrap function's layer ${terraform_data.db_bootstrap_layer.output} is missing (a new checkout, or a cleaned .terraform/): rebuild it with terraform apply -replace=terraform_data.db_bootstrap_layer."
    }
  }
}

# The RDS CA bundle, read at plan time: the function verifies the database's certificate with
# it, once checked against the pinned digest (below; the hosts fetch the same bundle, same check).
data "http" "rds_ca_bundle" {
  url = "https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem"
}

data "archive_file" "db_bootstrap" {
  type             = "zip"
  output_path      = "${path.module}/.terraform/${var.name}-db-bootstrap.zip"
  output_file_mode = "0644"

  source {
    content  = file("${path.module}/functions/db_bootstrap.py")
    filename = "db_bootstrap.py"
  }
  source {
    content  = data.http.rds_ca_bundle.response_body
    filename = "rds-ca.pem"
  }
}

resource "aws_cloudwatch_log_group" "db_bootstrap" {
  name              = "/aws/lambda/${var.name}-db-bootstrap"
  retention_in_days = 7
  #checkov:skip=CKV_AWS_158:A lab's logs: CloudWatch's own encryption suffices; a KMS key would outlive the lab.
  #checkov:skip=CKV_AWS_338:A lab lives for hours: a week of the bootstrap's log is enough.
}

resource "aws_lambda_function" "db_bootstrap" {
  function_name    = "${var.name}-db-bootstrap"
  description      = "Creates the Showdown lab's database roles with the RDS master password; invoked by Terraform"
  role             = aws_iam_role.db_bootstrap.arn
  runtime          = "python${local.db_bootstrap_python}"
  handler          = "db_bootstrap.handler"
  filename         = data.archive_file.db_bootstrap.output_path
  source_code_hash = data.archive_file.db_bootstrap.output_base64sha256
  layers           = [aws_lambda_layer_version.db_bootstrap.arn]
  timeout          = 60
  memory_size      = 128

  vpc_config {
    subnet_ids         = aws_subnet.private[*].id
    security_group_ids = [aws_security_group.db_bootstrap.id]
  }
  # On destroy, its network interfaces move to the closed default group first, so that the lab's
  # groups are not held up by AWS's slow release of a function's interfaces.
  replace_security_groups_on_destroy = true

  depends_on = [aws_cloudwatch_log_group.db_bootstrap, aws_iam_role_policy_attachment.db_bootstrap_vpc]

  # Checked on every plan but a destroy's: a changed bundle stops the lab, not its removal.
  lifecycle {
    precondition {
      condition     = data.http.rds_ca_bundle.status_code == 200 && sha256(data.http.rds_ca_bundle.response_body) == var.rds_ca_bundle_sha256
      error_message = "The RDS CA bundle served now (HTTP ${data.http.rds_ca_bundle.status_code}) has the SHA-256 ${sha256(data.http.rds_ca_bundle.response_body)}, not rds_ca_bundle_sha256 (${var.rds_ca_bundle_sha256}): AWS has changed it. Review it, then pass -var rds_ca_bundle_sha256=${sha256(data.http.rds_ca_bundle.response_body)}."
    }
  }

  #checkov:skip=CKV_AWS_50:One invocation per lab: its log is enough, X-Ray tracing would add a service.
  #checkov:skip=CKV_AWS_115:Only Terraform invokes it, once; reserving concurrency fails on new accounts' limit of 10.
  #checkov:skip=CKV_AWS_116:Invoked synchronously by Terraform, whose apply fails with the error: no queue to dead-letter.
  #checkov:skip=CKV_AWS_272:The code is this repository's file and PyPI's hash-pinned wheels, packaged by Terraform; signing would need a signer profile per lab.
}

resource "aws_lambda_invocation" "db_bootstrap" {
  function_name = aws_lambda_function.db_bootstrap.function_name
  input = jsonencode({
    host              = aws_db_instance.lab.address
    port              = aws_db_instance.lab.port
    master_secret_arn = aws_db_instance.lab.master_user_secret[0].secret_arn
    role_secret_arns  = [aws_secretsmanager_secret.db_targets.arn, aws_secretsmanager_secret.db_runs.arn]
  })

  triggers = {
    passwords = join(",", [aws_secretsmanager_secret_version.db_targets.version_id, aws_secretsmanager_secret_version.db_runs.version_id])
    code      = data.archive_file.db_bootstrap.output_base64sha256
    layer     = aws_lambda_layer_version.db_bootstrap.arn
    database  = aws_db_instance.lab.resource_id
  }

  # The function reaches the database and the Secrets Manager endpoint through these.
  depends_on = [
    aws_iam_role_policy.db_bootstrap_secrets,
    aws_vpc_endpoint.secretsmanager,
    aws_vpc_security_group_egress_rule.db_bootstrap_to_db,
    aws_vpc_security_group_egress_rule.db_bootstrap_to_secrets,
    aws_vpc_security_group_ingress_rule.db_from_bootstrap,
    aws_vpc_security_group_ingress_rule.secrets_from_bootstrap,
  ]
}
