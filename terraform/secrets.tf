# The lab's credentials, made here and kept in Secrets Manager, one secret per reader's need, so
# that each host role can be given exactly its own (iam.tf):
#
#   probe_token    the probe's token             API host, guns
#   probe_tls_key  the probe's TLS key           API host only: a gun cannot impersonate the probe
#   db_targets     the targets' database role    API host only
#   db_runs        the runs' store role          guns only
#
# The RDS master password is not among them: RDS makes and keeps it, and only the database
# bootstrap function reads it (bootstrap.tf). No secret is written into user data (readable by
# anything on a host through the instance metadata) or an output. This state holds these
# secrets too: keep it private (.gitignore keeps it out of the repository).

resource "random_password" "probe_token" {
  length  = 48
  special = false
}

resource "tls_private_key" "probe" {
  algorithm   = "ECDSA"
  ecdsa_curve = "P256"
}

resource "tls_self_signed_cert" "probe" {
  private_key_pem       = tls_private_key.probe.private_key_pem
  validity_period_hours = var.probe_certificate_days * 24
  # An apply in the last 30 days makes a new certificate; the hosts, whose user data carries it,
  # are then rebuilt with it (user_data_replace_on_change), the API host keeping its address.
  early_renewal_hours = 30 * 24
  allowed_uses        = ["digital_signature", "server_auth"]
  # The guns reach the probe by the API host's private address.
  ip_addresses = [aws_network_interface.api.private_ip]
  dns_names    = ["probe.${var.name}.internal"]

  subject {
    common_name  = "probe.${var.name}.internal"
    organization = "Showdown lab ${var.name}"
  }
}

resource "random_password" "db_targets" {
  length  = 40
  special = false
}

resource "random_password" "db_runs" {
  length  = 40
  special = false
}

locals {
  # The database roles and their databases; the bootstrap function makes each role the owner of
  # its database and of nothing else.
  db_roles = {
    targets = { username = "showdown", dbname = "showdown", password = random_password.db_targets.result }
    runs    = { username = "runs", dbname = "showdown_runs", password = random_password.db_runs.result }
  }
}

resource "aws_secretsmanager_secret" "probe_token" {
  name                    = "${var.name}/probe-token"
  description             = "The Showdown probe's token (API host and guns)"
  recovery_window_in_days = 0
  #checkov:skip=CKV_AWS_149:Secrets Manager's own key: a customer key would outlive the lab.
  #checkov:skip=CKV2_AWS_57:The token lives as long as the lab; a new lab makes a new one.
}

resource "aws_secretsmanager_secret_version" "probe_token" {
  secret_id     = aws_secretsmanager_secret.probe_token.id
  secret_string = random_password.probe_token.result
}

resource "aws_secretsmanager_secret" "probe_tls_key" {
  name                    = "${var.name}/probe-tls-key"
  description             = "The Showdown probe's TLS private key (API host only)"
  recovery_window_in_days = 0
  #checkov:skip=CKV_AWS_149:Secrets Manager's own key: a customer key would outlive the lab.
  #checkov:skip=CKV2_AWS_57:The key lives as long as its certificate; a renewal makes a new one.
}

resource "aws_secretsmanager_secret_version" "probe_tls_key" {
  secret_id     = aws_secretsmanager_secret.probe_tls_key.id
  secret_string = tls_private_key.probe.private_key_pem
}

resource "aws_secretsmanager_secret" "db_targets" {
  name                    = "${var.name}/db-targets"
  description             = "The targets' database role (API host only)"
  recovery_window_in_days = 0
  #checkov:skip=CKV_AWS_149:Secrets Manager's own key: a customer key would outlive the lab.
  #checkov:skip=CKV2_AWS_57:The password lives as long as the lab; a new lab makes a new one.
}

resource "aws_secretsmanager_secret_version" "db_targets" {
  secret_id     = aws_secretsmanager_secret.db_targets.id
  secret_string = jsonencode(local.db_roles.targets)
}

resource "aws_secretsmanager_secret" "db_runs" {
  name                    = "${var.name}/db-runs"
  description             = "The runs' store database role (guns only)"
  recovery_window_in_days = 0
  #checkov:skip=CKV_AWS_149:Secrets Manager's own key: a customer key would outlive the lab.
  #checkov:skip=CKV2_AWS_57:The password lives as long as the lab; a new lab makes a new one.
}

resource "aws_secretsmanager_secret_version" "db_runs" {
  secret_id     = aws_secretsmanager_secret.db_runs.id
  secret_string = jsonencode(local.db_roles.runs)
}
