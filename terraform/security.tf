# Security groups that admit only what the lab needs, one rule resource per rule, each naming
# the security group it admits rather than an address range. The only address ranges are the
# operator's for SSH (a variable with no default) and the proxy's way out on 80 and 443: the
# API host, the guns and the bootstrap function have no route to the internet of their own.
#
#   gun       -> api     : api_port (the load), probe_port (the probe's samples, TLS and a token)
#   gun       -> db      : 5432 (the runs' store, role `runs`)
#   api       -> db      : 5432 (the targets' database, role `showdown`)
#   bootstrap -> db      : 5432 (the master user, once)
#   api, gun, bootstrap -> secrets endpoint : 443 (Secrets Manager, inside the VPC)
#   api, gun  -> proxy   : 3128 (packages, toolchains, dependencies: the names it allows only)
#   proxy     -> internet: 80, 443
#   operator  -> api, gun, proxy : 22

resource "aws_security_group" "gun" {
  name        = "${var.name}-gun"
  description = "Showdown gun hosts: loadgen"
  vpc_id      = aws_vpc.lab.id
}

resource "aws_security_group" "api" {
  name        = "${var.name}-api"
  description = "Showdown API host: the targets and the probe"
  vpc_id      = aws_vpc.lab.id
}

resource "aws_security_group" "db" {
  name        = "${var.name}-db"
  description = "Showdown PostgreSQL: the targets' database and the runs' store"
  vpc_id      = aws_vpc.lab.id
}

resource "aws_security_group" "proxy" {
  name        = "${var.name}-proxy"
  description = "Showdown egress proxy: the hosts' downloads, by name"
  vpc_id      = aws_vpc.lab.id
}

resource "aws_security_group" "secrets" {
  name        = "${var.name}-secrets"
  description = "Showdown Secrets Manager endpoint"
  vpc_id      = aws_vpc.lab.id
}

resource "aws_security_group" "db_bootstrap" {
  name        = "${var.name}-db-bootstrap"
  description = "Showdown database bootstrap function"
  vpc_id      = aws_vpc.lab.id
}

# --- API host

resource "aws_vpc_security_group_ingress_rule" "api_from_gun" {
  security_group_id            = aws_security_group.api.id
  description                  = "The load, from the guns only"
  referenced_security_group_id = aws_security_group.gun.id
  ip_protocol                  = "tcp"
  from_port                    = var.api_port
  to_port                      = var.api_port
}

resource "aws_vpc_security_group_ingress_rule" "probe_from_gun" {
  security_group_id            = aws_security_group.api.id
  description                  = "The probe's samples (TLS and a token), to the guns only"
  referenced_security_group_id = aws_security_group.gun.id
  ip_protocol                  = "tcp"
  from_port                    = var.probe_port
  to_port                      = var.probe_port
}

resource "aws_vpc_security_group_ingress_rule" "api_ssh" {
  security_group_id = aws_security_group.api.id
  description       = "SSH from the operator only"
  cidr_ipv4         = var.operator_cidr
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
}

resource "aws_vpc_security_group_egress_rule" "api_to_db" {
  security_group_id            = aws_security_group.api.id
  description                  = "The targets' database"
  referenced_security_group_id = aws_security_group.db.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

resource "aws_vpc_security_group_egress_rule" "api_to_proxy" {
  security_group_id            = aws_security_group.api.id
  description                  = "Packages and toolchains, through the proxy"
  referenced_security_group_id = aws_security_group.proxy.id
  ip_protocol                  = "tcp"
  from_port                    = local.proxy_port
  to_port                      = local.proxy_port
}

resource "aws_vpc_security_group_egress_rule" "api_to_secrets" {
  security_group_id            = aws_security_group.api.id
  description                  = "Secrets Manager, through the VPC endpoint"
  referenced_security_group_id = aws_security_group.secrets.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
}

# --- Gun hosts

resource "aws_vpc_security_group_ingress_rule" "gun_ssh" {
  security_group_id = aws_security_group.gun.id
  description       = "SSH from the operator only"
  cidr_ipv4         = var.operator_cidr
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
}

resource "aws_vpc_security_group_egress_rule" "gun_to_api" {
  security_group_id            = aws_security_group.gun.id
  description                  = "The load"
  referenced_security_group_id = aws_security_group.api.id
  ip_protocol                  = "tcp"
  from_port                    = var.api_port
  to_port                      = var.api_port
}

resource "aws_vpc_security_group_egress_rule" "gun_to_probe" {
  security_group_id            = aws_security_group.gun.id
  description                  = "The probe"
  referenced_security_group_id = aws_security_group.api.id
  ip_protocol                  = "tcp"
  from_port                    = var.probe_port
  to_port                      = var.probe_port
}

resource "aws_vpc_security_group_egress_rule" "gun_to_store" {
  security_group_id            = aws_security_group.gun.id
  description                  = "The runs' store"
  referenced_security_group_id = aws_security_group.db.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

resource "aws_vpc_security_group_egress_rule" "gun_to_proxy" {
  security_group_id            = aws_security_group.gun.id
  description                  = "Packages and toolchains, through the proxy"
  referenced_security_group_id = aws_security_group.proxy.id
  ip_protocol                  = "tcp"
  from_port                    = local.proxy_port
  to_port                      = local.proxy_port
}

resource "aws_vpc_security_group_egress_rule" "gun_to_secrets" {
  security_group_id            = aws_security_group.gun.id
  description                  = "Secrets Manager, through the VPC endpoint"
  referenced_security_group_id = aws_security_group.secrets.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
}

# --- Egress proxy: the hosts' only way to the internet, for the names Squid allows.

resource "aws_vpc_security_group_ingress_rule" "proxy_from_api" {
  security_group_id            = aws_security_group.proxy.id
  description                  = "The API host's downloads"
  referenced_security_group_id = aws_security_group.api.id
  ip_protocol                  = "tcp"
  from_port                    = local.proxy_port
  to_port                      = local.proxy_port
}

resource "aws_vpc_security_group_ingress_rule" "proxy_from_gun" {
  security_group_id            = aws_security_group.proxy.id
  description                  = "The guns' downloads"
  referenced_security_group_id = aws_security_group.gun.id
  ip_protocol                  = "tcp"
  from_port                    = local.proxy_port
  to_port                      = local.proxy_port
}

resource "aws_vpc_security_group_ingress_rule" "proxy_ssh" {
  security_group_id = aws_security_group.proxy.id
  description       = "SSH from the operator only (Squid's log)"
  cidr_ipv4         = var.operator_cidr
  ip_protocol       = "tcp"
  from_port         = 22
  to_port           = 22
}

# The package mirrors and registries sit behind CDNs with no published address ranges: the
# proxy's own way out is open on 80 and 443, and Squid narrows it to the allowed names.
resource "aws_vpc_security_group_egress_rule" "proxy_http" {
  security_group_id = aws_security_group.proxy.id
  description       = "Debian packages (HTTP, signed), for the allowed names only"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
}

resource "aws_vpc_security_group_egress_rule" "proxy_https" {
  security_group_id = aws_security_group.proxy.id
  description       = "Packages, toolchains and dependencies (HTTPS), for the allowed names only"
  cidr_ipv4         = "0.0.0.0/0"
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
}

# --- Secrets Manager endpoint

resource "aws_vpc_security_group_ingress_rule" "secrets_from_api" {
  security_group_id            = aws_security_group.secrets.id
  description                  = "The API host's secrets"
  referenced_security_group_id = aws_security_group.api.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
}

resource "aws_vpc_security_group_ingress_rule" "secrets_from_gun" {
  security_group_id            = aws_security_group.secrets.id
  description                  = "The guns' secrets"
  referenced_security_group_id = aws_security_group.gun.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
}

resource "aws_vpc_security_group_ingress_rule" "secrets_from_bootstrap" {
  security_group_id            = aws_security_group.secrets.id
  description                  = "The bootstrap function's secrets"
  referenced_security_group_id = aws_security_group.db_bootstrap.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
}

# --- Database bootstrap function: the database and the endpoint, nothing else.

resource "aws_vpc_security_group_egress_rule" "db_bootstrap_to_db" {
  security_group_id            = aws_security_group.db_bootstrap.id
  description                  = "The database, as its master user"
  referenced_security_group_id = aws_security_group.db.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

resource "aws_vpc_security_group_egress_rule" "db_bootstrap_to_secrets" {
  security_group_id            = aws_security_group.db_bootstrap.id
  description                  = "Secrets Manager, through the VPC endpoint"
  referenced_security_group_id = aws_security_group.secrets.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
}

# --- Database: reached by the API host, the guns and the bootstrap, reaching nothing.

resource "aws_vpc_security_group_ingress_rule" "db_from_api" {
  security_group_id            = aws_security_group.db.id
  description                  = "The targets"
  referenced_security_group_id = aws_security_group.api.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

resource "aws_vpc_security_group_ingress_rule" "db_from_gun" {
  security_group_id            = aws_security_group.db.id
  description                  = "The guns' store of runs"
  referenced_security_group_id = aws_security_group.gun.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}

resource "aws_vpc_security_group_ingress_rule" "db_from_bootstrap" {
  security_group_id            = aws_security_group.db.id
  description                  = "The bootstrap function, once"
  referenced_security_group_id = aws_security_group.db_bootstrap.id
  ip_protocol                  = "tcp"
  from_port                    = 5432
  to_port                      = 5432
}
