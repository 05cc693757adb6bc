# The hosts: Debian 12, IMDSv2 only, encrypted disks, set up by cloud-init (templates/). The
# API host keeps a fixed private address (its network interface), which the probe's TLS
# certificate names. A change to a host's user data rebuilds it (cloud-init runs at the first
# boot only), so a renewed probe certificate reaches every host.

data "aws_ami" "debian" {
  most_recent = true
  owners      = [var.ami_owner]

  filter {
    name   = "name"
    values = [var.ami_name_filter]
  }
  filter {
    name   = "architecture"
    values = ["x86_64"]
  }
}

resource "aws_key_pair" "operator" {
  key_name   = "${var.name}-operator"
  public_key = var.ssh_public_key
}

locals {
  proxy_port = 3128
  # What the hosts' setup fetches, by name; the proxy refuses every other. Each download is
  # checked: apt by Debian's signatures, the toolchains and the RDS CA bundle by pinned SHA-256
  # (templates/install.sh.tftpl), the dependencies by Cargo.lock, package-lock.json and go.sum.
  egress_domains = distinct(concat([
    ".deb.debian.org", "security.debian.org",                       # Debian packages
    "nodejs.org", "dl.google.com", "static.rust-lang.org",          # Node.js, Go, rustup and Rust
    "index.crates.io", "static.crates.io",                          # crates
    "registry.npmjs.org",                                           # npm packages
    "proxy.golang.org", "sum.golang.org", "storage.googleapis.com", # Go modules (the proxy redirects to storage)
    "truststore.pki.rds.amazonaws.com",                             # the RDS CA bundle
    regex("^https://([^/:@]+)/", var.showdown_repository)[0],       # Showdown's repository
  ], var.extra_egress_domains))

  install_script = templatefile("${path.module}/templates/install.sh.tftpl", {
    repository           = var.showdown_repository
    revision             = var.showdown_revision
    rds_ca_bundle_sha256 = var.rds_ca_bundle_sha256
  })
  # What both hosts' cloud-init is given: no secret, only where to read theirs.
  common = {
    region                = var.region
    db_host               = aws_db_instance.lab.address
    probe_token_arn       = aws_secretsmanager_secret.probe_token.arn
    probe_certificate_b64 = base64encode(tls_self_signed_cert.probe.cert_pem)
    install_script_b64    = base64encode(local.install_script)
    proxy_address         = aws_instance.proxy.private_ip
    proxy_port            = local.proxy_port
    api_port              = var.api_port
    probe_port            = var.probe_port
  }
}

# The egress proxy: the API host and the guns reach the internet through it only (security.tf),
# and Squid lets them fetch from local.egress_domains only. It holds no secret and has no role.
resource "aws_instance" "proxy" {
  ami                         = data.aws_ami.debian.id
  instance_type               = var.proxy_instance_type
  key_name                    = aws_key_pair.operator.key_name
  subnet_id                   = aws_subnet.public[0].id
  vpc_security_group_ids      = [aws_security_group.proxy.id]
  associate_public_ip_address = true
  monitoring                  = true
  ebs_optimized               = true
  user_data_replace_on_change = true
  user_data = templatefile("${path.module}/templates/proxy.yaml.tftpl", {
    vpc_cidr   = var.vpc_cidr
    proxy_port = local.proxy_port
    domains    = join(" ", local.egress_domains)
  })

  metadata_options {
    http_tokens   = "required"
    http_endpoint = "enabled"
  }

  root_block_device {
    volume_size = 8
    volume_type = "gp3"
    encrypted   = true
  }

  tags = { Name = "${var.name}-proxy" }

  #checkov:skip=CKV_AWS_88:The proxy reaches the internet by its public address (no NAT gateway: it would cost more than the lab).
  #checkov:skip=CKV2_AWS_41:The proxy reads nothing from AWS: no role, so no credentials on it to take.
}

resource "aws_network_interface" "api" {
  subnet_id       = aws_subnet.public[0].id
  security_groups = [aws_security_group.api.id]

  tags = { Name = "${var.name}-api" }
}

resource "aws_instance" "api" {
  ami                         = data.aws_ami.debian.id
  instance_type               = var.api_instance_type
  key_name                    = aws_key_pair.operator.key_name
  iam_instance_profile        = aws_iam_instance_profile.api.name
  monitoring                  = true
  ebs_optimized               = true
  user_data_replace_on_change = true
  user_data = templatefile("${path.module}/templates/api.yaml.tftpl", merge(local.common, {
    db_secret_arn     = aws_secretsmanager_secret.db_targets.arn
    probe_tls_key_arn = aws_secretsmanager_secret.probe_tls_key.arn
    target            = var.target
  }))

  network_interface {
    network_interface_id = aws_network_interface.api.id
    device_index         = 0
  }

  metadata_options {
    http_tokens   = "required"
    http_endpoint = "enabled"
  }

  root_block_device {
    volume_size = 20
    volume_type = "gp3"
    encrypted   = true
  }

  # The setup reads the secrets and the database, as the role the bootstrap made: only once
  # they exist.
  depends_on = [
    aws_secretsmanager_secret_version.probe_token,
    aws_secretsmanager_secret_version.probe_tls_key,
    aws_lambda_invocation.db_bootstrap,
    aws_vpc_endpoint.secretsmanager,
  ]

  tags = { Name = "${var.name}-api" }
}

# The operator's address for SSH; the guns reach the API host by its private address.
resource "aws_eip" "api" {
  domain            = "vpc"
  network_interface = aws_network_interface.api.id
  depends_on        = [aws_internet_gateway.lab, aws_instance.api]

  tags = { Name = "${var.name}-api" }
}

resource "aws_instance" "gun" {
  count                       = var.gun_count
  ami                         = data.aws_ami.debian.id
  instance_type               = var.gun_instance_type
  key_name                    = aws_key_pair.operator.key_name
  iam_instance_profile        = aws_iam_instance_profile.gun.name
  subnet_id                   = aws_subnet.public[count.index % 2].id
  vpc_security_group_ids      = [aws_security_group.gun.id]
  associate_public_ip_address = true
  monitoring                  = true
  ebs_optimized               = true
  user_data_replace_on_change = true
  user_data = templatefile("${path.module}/templates/gun.yaml.tftpl", merge(local.common, {
    db_secret_arn = aws_secretsmanager_secret.db_runs.arn
    api_address   = aws_network_interface.api.private_ip
    gun_index     = count.index
    gun_count     = var.gun_count
  }))

  metadata_options {
    http_tokens   = "required"
    http_endpoint = "enabled"
  }

  root_block_device {
    volume_size = 30
    volume_type = "gp3"
    encrypted   = true
  }

  depends_on = [
    aws_secretsmanager_secret_version.probe_token,
    aws_lambda_invocation.db_bootstrap,
    aws_vpc_endpoint.secretsmanager,
  ]

  tags = { Name = "${var.name}-gun-${count.index}" }

  #checkov:skip=CKV_AWS_88:The operator reaches a gun by SSH (from operator_cidr only); a bastion would add a host to a two-host lab.
}
