output "ssh_api" {
  description = "SSH to the API host (the targets and the probe)."
  value       = "ssh admin@${aws_eip.api.public_ip}"
}

output "ssh_guns" {
  description = "SSH to each gun host (loadgen)."
  value       = [for g in aws_instance.gun : "ssh admin@${g.public_ip}"]
}

output "api_private_address" {
  description = "The API host's address inside the VPC: the target's base URL is http://ADDRESS:api_port."
  value       = aws_network_interface.api.private_ip
}

output "target_url" {
  description = "The target's base URL, from the guns."
  value       = "http://${aws_network_interface.api.private_ip}:${var.api_port}"
}

output "probe_endpoint" {
  description = "The probe, from the guns (TLS; token in /etc/showdown/probe.token on each gun)."
  value       = "${aws_network_interface.api.private_ip}:${var.probe_port}"
}

output "ssh_proxy" {
  description = "SSH to the egress proxy (Squid's log of what the hosts fetched or were refused: /var/log/squid/access.log)."
  value       = "ssh admin@${aws_instance.proxy.public_ip}"
}

output "probe_certificate_pem" {
  description = "The probe's self-signed certificate (public): loadgen --probe-ca trusts it; `openssl x509 -noout -fingerprint -sha256` gives the fingerprint that --probe-fingerprint pins."
  value       = tls_self_signed_cert.probe.cert_pem
}

output "probe_certificate_expires" {
  description = "When the probe's certificate expires; a `terraform apply` in its last 30 days renews it and rebuilds the hosts with it."
  value       = tls_self_signed_cert.probe.validity_end_time
}

output "database_address" {
  description = "The RDS PostgreSQL host (private)."
  value       = aws_db_instance.lab.address
}

output "database_secret_arn" {
  description = "The Secrets Manager secret holding the RDS master user's password (managed by AWS; never in this state; read by the bootstrap function only)."
  value       = aws_db_instance.lab.master_user_secret[0].secret_arn
}

output "database_role_secret_arns" {
  description = "The secrets of the database roles: the targets' (`showdown`, read by the API host) and the runs' store's (`runs`, read by the guns)."
  value = {
    targets = aws_secretsmanager_secret.db_targets.arn
    runs    = aws_secretsmanager_secret.db_runs.arn
  }
}

output "database_bootstrap" {
  description = "What the bootstrap function did: the roles it created or updated, and whether PUBLIC can still connect to the postgres database."
  value       = jsondecode(aws_lambda_invocation.db_bootstrap.result)
}
