# The probe's credentials: a token and a TLS key with its self-signed certificate. They are made
# here and kept in Secrets Manager, read at boot by the hosts through their roles, so that no
# secret is written into user data (readable by anything on a host through the instance
# metadata) or an output. This state holds them too: keep it private (.gitignore keeps it out
# of the repository).

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
  validity_period_hours = 24 * 30
  allowed_uses          = ["digital_signature", "server_auth"]
  # The guns reach the probe by the API host's private address.
  ip_addresses = [aws_network_interface.api.private_ip]
  dns_names    = ["probe.${var.name}.internal"]

  subject {
    common_name  = "probe.${var.name}.internal"
    organization = "Showdown lab ${var.name}"
  }
}

resource "aws_secretsmanager_secret" "probe" {
  name                    = "${var.name}/probe"
  description             = "The Showdown probe's token and TLS key"
  recovery_window_in_days = 0
  #checkov:skip=CKV_AWS_149:Secrets Manager's own key: a customer key would outlive the lab.
  #checkov:skip=CKV2_AWS_57:The token lives as long as the lab; a new lab makes a new one.
}

resource "aws_secretsmanager_secret_version" "probe" {
  secret_id = aws_secretsmanager_secret.probe.id
  secret_string = jsonencode({
    token   = random_password.probe_token.result
    tls_key = tls_private_key.probe.private_key_pem
  })
}
