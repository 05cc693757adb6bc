# Security groups that admit only what the lab needs, one rule resource per rule, each naming
# the security group it admits rather than an address range. The only address ranges are the
# operator's for SSH and package_egress_cidrs for installing packages: both come from variables.
#
#   gun  -> api : api_port (the load), probe_port (the probe's samples, TLS and a token)
#   gun  -> db  : 5432 (the runs' store, shared by every gun of a run group)
#   api  -> db  : 5432 (the targets' database)
#   operator -> api, gun : 22

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

resource "aws_vpc_security_group_egress_rule" "api_packages_https" {
  for_each          = toset(var.package_egress_cidrs)
  security_group_id = aws_security_group.api.id
  description       = "Packages and toolchains (HTTPS)"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
}

resource "aws_vpc_security_group_egress_rule" "api_packages_http" {
  for_each          = toset(var.package_egress_cidrs)
  security_group_id = aws_security_group.api.id
  description       = "Debian packages (HTTP, signed)"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
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

resource "aws_vpc_security_group_egress_rule" "gun_packages_https" {
  for_each          = toset(var.package_egress_cidrs)
  security_group_id = aws_security_group.gun.id
  description       = "Packages and toolchains (HTTPS)"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 443
  to_port           = 443
}

resource "aws_vpc_security_group_egress_rule" "gun_packages_http" {
  for_each          = toset(var.package_egress_cidrs)
  security_group_id = aws_security_group.gun.id
  description       = "Debian packages (HTTP, signed)"
  cidr_ipv4         = each.value
  ip_protocol       = "tcp"
  from_port         = 80
  to_port           = 80
}

# --- Database: reached by the API host and the guns, reaching nothing.

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
