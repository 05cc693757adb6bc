# The hosts: Debian 12, IMDSv2 only, encrypted disks, set up by cloud-init (templates/). The
# API host keeps a fixed private address (its network interface), which the probe's TLS
# certificate names.

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
  store_database = "showdown_runs"
  install_script = templatefile("${path.module}/templates/install.sh.tftpl", {
    repository = var.showdown_repository
    revision   = var.showdown_revision
  })
  # What both hosts' cloud-init is given: no secret, only where to read them.
  common = {
    region                = var.region
    db_host               = aws_db_instance.lab.address
    db_secret_arn         = aws_db_instance.lab.master_user_secret[0].secret_arn
    probe_secret_arn      = aws_secretsmanager_secret.probe.arn
    probe_certificate_b64 = base64encode(tls_self_signed_cert.probe.cert_pem)
    install_script_b64    = base64encode(local.install_script)
    api_port              = var.api_port
    probe_port            = var.probe_port
    store_database        = local.store_database
  }
}

resource "aws_network_interface" "api" {
  subnet_id       = aws_subnet.public[0].id
  security_groups = [aws_security_group.api.id]

  tags = { Name = "${var.name}-api" }
}

resource "aws_instance" "api" {
  ami                  = data.aws_ami.debian.id
  instance_type        = var.api_instance_type
  key_name             = aws_key_pair.operator.key_name
  iam_instance_profile = aws_iam_instance_profile.api.name
  monitoring           = true
  ebs_optimized        = true
  user_data = templatefile("${path.module}/templates/api.yaml.tftpl", merge(local.common, {
    target = var.target
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

  # The setup reads the secrets and the database: only once they exist.
  depends_on = [aws_secretsmanager_secret_version.probe, aws_db_instance.lab]

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
  user_data = templatefile("${path.module}/templates/gun.yaml.tftpl", merge(local.common, {
    api_address = aws_network_interface.api.private_ip
    gun_index   = count.index
    gun_count   = var.gun_count
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

  depends_on = [aws_secretsmanager_secret_version.probe, aws_db_instance.lab]

  tags = { Name = "${var.name}-gun-${count.index}" }

  #checkov:skip=CKV_AWS_88:The operator reaches a gun by SSH (from operator_cidr only); a bastion would add a host to a two-host lab.
}
